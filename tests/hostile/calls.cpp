// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/hostile/calls.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <limits>

#include "dbus/sdbus_compat.h"
#include "tests/hostile/model.h"

namespace cxiosync::hostile {

namespace {

constexpr const char* kManagerIface = "org.cxiosync1.Manager";
constexpr const char* kLoopIface = "org.cxiosync1.Loop";
constexpr const char* kClientRefused = "client-refused";

bool isRead(const std::string& m) {
  return m == "GetStatus" || m == "ListCgroups" || m == "ListBoosts" || m == "ListSyncers" ||
         m == "GetMetrics" || m == "ShowCgroup" || m == "LoopList";
}

bool validBlockSize(uint32_t b) {
  return b >= 512 && b <= 65536 && (b & (b - 1)) == 0;
}

const Option* find(const Spec& s, const std::string& key) {
  for (const auto& o : s.options)
    if (o.key == key) return &o;
  return nullptr;
}

// An explicit backend and the options it cannot have (docs/dbus-api.md, LoopSetup options):
// kernel with more than one worker, an nbd_timeout or a server_cgroup; nbd with offset, size_limit,
// autoclear, partscan or queue_depth. Bad values, refused before authorization. With "auto"
// only the daemon can tell (it depends on direct I/O), so nothing is refused for it.
bool backendCombinationValid(const Spec& s) {
  const Option* backend = find(s, "backend");
  const std::string b = backend ? backend->s : "auto";
  auto num = [&](const char* key) {
    const Option* o = find(s, key);
    return o ? o->n : 0;
  };
  auto on = [&](const char* key) {
    const Option* o = find(s, key);
    return o && o->b;
  };
  if (b == "kernel")
    return num("workers") <= 1 && num("nbd_timeout") == 0 && !find(s, "server_cgroup");
  if (b == "nbd")
    return num("offset") == 0 && num("size_limit") == 0 && !on("autoclear") && !on("partscan") &&
           num("queue_depth") == 0;
  return true;
}

// Keys, types, and (LoopSetup) the documented value ranges.
bool optionsValid(const Spec& s) {
  const auto rules = optionRules(s.method);
  for (const auto& o : s.options) {
    const OptionRule* rule = nullptr;
    for (const auto& r : rules)
      if (o.key == r.key) rule = &r;
    if (!rule || o.type != rule->type) return false;
    if (s.method != "LoopSetup") continue;
    if (o.key == "direct_io" && o.s != "auto" && o.s != "on" && o.s != "off") return false;
    if (o.key == "backend" && o.s != "auto" && o.s != "kernel" && o.s != "nbd") return false;
    if (o.key == "server_cgroup" && o.s != "caller" && o.s != "daemon") return false;
    if (o.key == "workers" && o.n > 16) return false;
    // The documented upper bound is the loop module's hw_queue_depth, which the device checks
    // (after authorization); what no module can have (above 65536) is refused before it.
    if (o.key == "queue_depth" && o.n != 0 && (o.n < 4 || o.n > 65536)) return false;
    if (o.key == "nbd_timeout" && o.n > 86400) return false;
    if (o.key == "block_size" && o.n != 0 && !validBlockSize(static_cast<uint32_t>(o.n)))
      return false;
    if ((o.key == "offset" || o.key == "size_limit") &&
        o.n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return false;
  }
  return s.method != "LoopSetup" || backendCombinationValid(s);
}

bool regularFd(FdKind k) {
  return k == FdKind::ReadOnly || k == FdKind::ReadWrite || k == FdKind::MemFd;
}

std::string expectedLoopSetup(const Spec& s, Caller caller, const World& w) {
  if (!optionsValid(s)) return kInvalidArgument;
  if (!w.loopBackend) return kNotSupported;
  if (s.fd == FdKind::PipeWrite || s.fd == FdKind::WriteOnly) return kInvalidArgument;
  if (caller == Caller::Other) return kAccessDenied;  // no polkit on the bus: root only
  return regularFd(s.fd) ? kOk : kInvalidArgument;    // "regular file or block device"
}

std::string expectedDevice(const Spec& s, Caller caller, const World& w) {
  if (s.method == "SetBlockSize" && !validBlockSize(s.number)) return kInvalidArgument;
  if (s.method == "SetWorkers" && (s.number < 1 || s.number > 16)) return kInvalidArgument;
  if (!optionsValid(s)) return kInvalidArgument;
  const Option* force = find(s, "force");
  // The device is foreign (set up by losetup): uid 0 with force only.
  if (caller != Caller::Root || !force || !force->b) return kAccessDenied;
  // A kernel loop device has no per-device worker count.
  if (s.method == "SetWorkers") return kNotSupported;
  if (s.method == "SetQueueDepth" && (s.number < 4 || s.number > w.hwQueueDepth))
    return kInvalidArgument;
  return kOk;
}

}  // namespace

const char* fdKindName(FdKind k) {
  static const char* const kNames[] = {"/dev/null",  "pipe-read",  "pipe-write", "socket",
                                       "O_PATH",     "write-only", "directory",  "read-only",
                                       "read-write", "eventfd",    "memfd"};
  return kNames[static_cast<int>(k)];
}

std::vector<int> openFds(const std::string& dir) {
  std::vector<int> fds(kFdKinds, -1);
  auto at = [&](FdKind k) -> int& { return fds[static_cast<int>(k)]; };
  at(FdKind::DevNull) = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int p[2];
  if (pipe2(p, O_CLOEXEC) == 0) {
    at(FdKind::PipeRead) = p[0];
    at(FdKind::PipeWrite) = p[1];
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) at(FdKind::Socket) = sv[0];
  const std::string img = dir + "/img", shared = dir + "/shared.img";
  at(FdKind::OPath) = open(img.c_str(), O_PATH | O_CLOEXEC);
  at(FdKind::WriteOnly) = open(shared.c_str(), O_WRONLY | O_CLOEXEC);
  at(FdKind::Directory) = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  at(FdKind::ReadOnly) = open(img.c_str(), O_RDONLY | O_CLOEXEC);
  at(FdKind::ReadWrite) = open(shared.c_str(), O_RDWR | O_CLOEXEC);
  at(FdKind::EventFd) = eventfd(0, EFD_CLOEXEC);
  at(FdKind::MemFd) = memfd_create("cxiosync-hostile", MFD_CLOEXEC);
  if (at(FdKind::MemFd) >= 0 && ftruncate(at(FdKind::MemFd), 1 << 20) != 0) {
    close(at(FdKind::MemFd));
    at(FdKind::MemFd) = -1;
  }
  return fds;
}

std::string expected(const Spec& s, Caller caller, const World& w) {
  if (s.onLoop && !w.loopObject) return kUnknownObject;
  if (s.shape == Shape::UnknownMethod) return kUnknownMethod;
  if (s.shape != Shape::Normal) return kInvalidArgs;  // sd-bus checks the signature
  const bool opts = optionsValid(s);
  if (s.onLoop) return expectedDevice(s, caller, w);
  if (s.method == "LoopSetup") return expectedLoopSetup(s, caller, w);
  if (isRead(s.method)) {
    if (s.method != "ShowCgroup") return opts ? kOk : kInvalidArgument;
    auto path = cgroupPath(s.text1);
    if (!path || !opts) return kInvalidArgument;
    return cgroupExists(w.cgroupRoot, *path) ? kOk : kNoSuchCgroup;
  }
  if (s.method == "Reload") {
    if (!opts) return kInvalidArgument;
    return caller == Caller::Other ? kAccessDenied : kOk;
  }
  auto path = cgroupPath(s.text1);
  bool ok = path && opts;
  if (s.method == "SetBoostPolicy") ok = ok && validBoostPolicy(s.text2);
  if (s.method == "SetBoostCeiling") ok = ok && validCeiling(s.text2);
  if (!ok) return kInvalidArgument;
  if (caller == Caller::Other) return kAccessDenied;
  return cgroupExists(w.cgroupRoot, *path) ? kOk : kNoSuchCgroup;
}

size_t payloadBytes(const Spec& s) {
  size_t n = s.text1.size() + s.text2.size();
  for (const auto& o : s.options) n += o.key.size() + o.s.size();
  return n;
}

bool wouldChange(const Spec& s, Caller caller, const World& w) {
  if (s.method == "Reload" || isRead(s.method)) return false;
  return expected(s, caller, w) == kOk;
}

// ---- sending -------------------------------------------------------------------------------

namespace {

sdbus::MethodCall makeCall(sdbus::IProxy& proxy, const std::string& iface,
                           const std::string& method) {
#if CXIOSYNC_SDBUS_MAJOR >= 2
  return proxy.createMethodCall(sdbus::InterfaceName{iface}, sdbus::MethodName{method});
#else
  return proxy.createMethodCall(iface, method);
#endif
}

std::map<std::string, sdbus::Variant> optionMap(const Spec& s) {
  std::map<std::string, sdbus::Variant> out;
  for (const auto& o : s.options) out.emplace(o.key, o.value);
  return out;
}

// The method's arguments before the options, in order.
void appendLeading(sdbus::MethodCall& m, const Spec& s, const std::vector<int>& fds) {
  const std::string& n = s.method;
  if (n == "ShowCgroup" || n == "ResetPolicy") m << s.text1;
  if (n == "SetIsolation" || n == "SetTenant") m << s.text1 << s.flag;
  if (n == "SetBoostPolicy" || n == "SetBoostCeiling") m << s.text1 << s.text2;
  if (n == "LoopSetup") m << sdbus::UnixFd(fds[static_cast<int>(s.fd)]);
  if (n == "SetDirectIO" || n == "SetAutoclear") m << s.flag;
  if (n == "SetBlockSize" || n == "SetWorkers" || n == "SetQueueDepth") m << s.number;
}

bool hasLeading(const std::string& n) {
  return n == "ShowCgroup" || n == "ResetPolicy" || n == "SetIsolation" || n == "SetTenant" ||
         n == "SetBoostPolicy" || n == "SetBoostCeiling" || n == "LoopSetup" ||
         n == "SetDirectIO" || n == "SetAutoclear" || n == "SetBlockSize" || n == "SetWorkers" ||
         n == "SetQueueDepth";
}

}  // namespace

std::string send(sdbus::IProxy& proxy, const Spec& s, const std::vector<int>& fds,
                 std::chrono::microseconds timeout, std::chrono::microseconds* took) {
  *took = std::chrono::microseconds(0);
  const std::string method = s.shape == Shape::UnknownMethod ? s.method + "X" : s.method;
  for (const auto& o : s.options)
    if (o.unsendable) return kClientRefused;
  auto m = makeCall(proxy, s.onLoop ? kLoopIface : kManagerIface, method);
  try {
    switch (s.shape) {
      case Shape::Normal:
      case Shape::UnknownMethod:
        appendLeading(m, s, fds);
        m << optionMap(s);
        break;
      case Shape::MissingArg:
        if (hasLeading(s.method)) m << optionMap(s);  // the leading argument left out
        break;
      case Shape::ExtraArg:
        appendLeading(m, s, fds);
        m << optionMap(s) << std::string("one too many");
        break;
      case Shape::WrongType:
        if (hasLeading(s.method)) {
          m << std::vector<std::string>{s.text1};  // "as" where s/b/u/h belong
        } else {
          m << std::map<std::string, std::string>{{"interactive", "true"}};  // a{ss}
        }
        m << optionMap(s);
        break;
    }
  } catch (const sdbus::Error&) {
    return kClientRefused;
  }
  // From here the message is built: the time to its answer is the daemon's (and the bus's).
  const auto t0 = std::chrono::steady_clock::now();
  std::string name = kOk;
  try {
    proxy.callMethod(m, static_cast<uint64_t>(timeout.count()));
  } catch (const sdbus::Error& e) {
    name = e.getName();
  }
  *took =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  return name;
}

// ---- option values -------------------------------------------------------------------------

const std::vector<std::string>& optionTypes() {
  static const std::vector<std::string> kTypes = {"b",  "y",  "n",     "q",    "i",   "u",
                                                  "x",  "t",  "d",     "s",    "o",   "g",
                                                  "as", "ay", "a{sv}", "(ss)", "(v)", "a{ss}"};
  return kTypes;
}

namespace {

template <class T>
T pick(std::mt19937_64& rng, const std::vector<T>& from) {
  return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
}

const std::vector<uint64_t>& interestingU64() {
  static const std::vector<uint64_t> v = {0,
                                          1,
                                          2,
                                          3,
                                          4,
                                          16,
                                          17,
                                          128,
                                          129,
                                          86400,
                                          86401,
                                          511,
                                          512,
                                          513,
                                          4096,
                                          65536,
                                          65537,
                                          0x7fffffffu,
                                          0xffffffffu,
                                          0x7fffffffffffffffull,
                                          0x8000000000000000ull,
                                          0xffffffffffffffffull};
  return v;
}

std::string stringValue(std::mt19937_64& rng) {
  static const std::vector<std::string> pool = {
      "",       "auto", "on",       "off",      "AUTO",  "On",   "auto ",
      "yes",    "true", "\xc3\xa9", "\x1b[31m", "\x7f",  "0",    "-1",
      "kernel", "nbd",  "NBD",      "Kernel",   "nbd\n", "loop", std::string("kernel\0x", 8),
      "\\xff"};
  switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
    case 0:
      return std::string(4096, 's');
    case 1:
      return std::string(std::uniform_int_distribution<size_t>(0, 300)(rng), 'x');
    default:
      return pick(rng, pool);
  }
}

}  // namespace

Option boolOption(const std::string& key, bool v) {
  Option o;
  o.key = key;
  o.type = "b";
  o.value = sdbus::Variant(v);
  o.b = v;
  return o;
}
Option u64Option(const std::string& key, uint64_t v) {
  Option o;
  o.key = key;
  o.type = "t";
  o.value = sdbus::Variant(v);
  o.n = v;
  return o;
}
Option u32Option(const std::string& key, uint32_t v) {
  Option o;
  o.key = key;
  o.type = "u";
  o.value = sdbus::Variant(v);
  o.n = v;
  return o;
}
Option stringOption(const std::string& key, const std::string& v) {
  Option o;
  o.key = key;
  o.type = "s";
  try {
    o.value = sdbus::Variant(v);
  } catch (const sdbus::Error&) {
    o.unsendable = true;
  }
  o.s = v.substr(0, v.find('\0'));
  return o;
}

Option option(const std::string& key, const std::string& type, std::mt19937_64& rng) {
  const uint64_t n = pick(rng, interestingU64());
  if (type == "b") return boolOption(key, (rng() & 1) != 0);
  if (type == "t") return u64Option(key, n);
  if (type == "u") return u32Option(key, static_cast<uint32_t>(n));
  if (type == "s") return stringOption(key, stringValue(rng));
  Option o;
  o.key = key;
  o.type = type;
  o.n = n;
  if (type == "y") o.value = sdbus::Variant(static_cast<uint8_t>(n));
  if (type == "n") o.value = sdbus::Variant(static_cast<int16_t>(n));
  if (type == "q") o.value = sdbus::Variant(static_cast<uint16_t>(n));
  if (type == "i") o.value = sdbus::Variant(static_cast<int32_t>(n));
  if (type == "x") o.value = sdbus::Variant(static_cast<int64_t>(n));
  if (type == "d") {
    static const std::vector<double> ds = {
        0.0, -0.0, 1.0, std::nan(""), std::numeric_limits<double>::infinity(), 1e308};
    o.value = sdbus::Variant(pick(rng, ds));
  }
  if (type == "o") o.value = sdbus::Variant(sdbus::ObjectPath("/org/cxiosync1"));
  if (type == "g") o.value = sdbus::Variant(sdbus::Signature("a{sv}"));
  if (type == "as") o.value = sdbus::Variant(std::vector<std::string>{"true", stringValue(rng)});
  if (type == "ay")
    o.value = sdbus::Variant(std::vector<uint8_t>{0xff, 0x00, static_cast<uint8_t>(n)});
  if (type == "a{sv}")
    o.value = sdbus::Variant(std::map<std::string, sdbus::Variant>{{key, sdbus::Variant(true)}});
  if (type == "(ss)") o.value = sdbus::Variant(sdbus::Struct<std::string, std::string>{key, "b"});
  if (type == "(v)") o.value = sdbus::Variant(sdbus::Struct<sdbus::Variant>{sdbus::Variant(true)});
  if (type == "a{ss}") o.value = sdbus::Variant(std::map<std::string, std::string>{{key, "true"}});
  return o;
}

const std::vector<std::string>& managerMethods() {
  static const std::vector<std::string> v = {
      "GetStatus",   "ListCgroups",  "ShowCgroup",     "ListBoosts",      "ListSyncers",
      "GetMetrics",  "SetIsolation", "SetBoostPolicy", "SetBoostCeiling", "SetTenant",
      "ResetPolicy", "Reload",       "LoopSetup",      "LoopList"};
  return v;
}

const std::vector<std::string>& loopMethods() {
  static const std::vector<std::string> v = {"SetDirectIO",  "SetBlockSize", "SetCapacity",
                                             "SetAutoclear", "SetWorkers",   "SetQueueDepth",
                                             "Detach"};
  return v;
}

}  // namespace cxiosync::hostile
