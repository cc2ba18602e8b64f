// cxiosync-loop: a development and diagnostic front end to LoopManager, run as root on the
// machine itself (no D-Bus). The operator CLI is `cxiosyncctl loop ...` over D-Bus.
//
//   cxiosync-loop [GLOBAL] add FILE [--read-only] [--offset N] [--size N] [--block-size N]
//                 [--direct-io=auto|on|off] [--autoclear] [--partscan] [--fd-read-only]
//                 [-- CMD ARGS...]
//   cxiosync-loop [GLOBAL] list [--all]
//   cxiosync-loop [GLOBAL] show DEV
//   cxiosync-loop [GLOBAL] set DEV [--direct-io=on|off] [--block-size N] [--capacity]
//                 [--autoclear=on|off] [--force]
//   cxiosync-loop [GLOBAL] detach DEV [--force]
//   cxiosync-loop [GLOBAL] reconcile
//   cxiosync-loop [GLOBAL] backends
// add also takes [--backend kernel|nbd|auto] [--workers N] [--queue-depth N] [--nbd-timeout S]
// and set [--queue-depth N] [--workers N]; DEV may be nbdN for show/set/detach. Those parts
// live in backend_tool.cpp (BlockDevices: daemon/blockdev/devices/backend_devices.h).
// GLOBAL: --json --sys-root DIR --dev-root DIR --run-dir DIR --as-uid N (root only: act as
// if that uid asked, for tests)
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "daemon/blockdev/devices/backend_tool.h"
#include "daemon/blockdev/loop/loop_manager.h"
#include "policy/json.h"

using namespace cxiosync;

namespace {

struct Global {
  bool json = false;
  LoopManagerOptions mo;
  uint32_t uid = static_cast<uint32_t>(::getuid());
};

[[noreturn]] void usage(int code) {
  std::fputs(
      "usage: cxiosync-loop [--json] [--sys-root DIR] [--dev-root DIR] [--run-dir DIR]\n"
      "                     [--as-uid N] COMMAND ...\n"
      "  add FILE [--read-only] [--offset N] [--size N] [--block-size N]\n"
      "           [--direct-io=auto|on|off] [--autoclear] [--partscan] [--fd-read-only]\n"
      "           [-- CMD ARGS...]\n"
      "      With --autoclear the device lives only while something holds it: give a command\n"
      "      ({} in it and $CXIOSYNC_LOOP_DEV name the device); it runs with the device open.\n"
      "           [--backend kernel|nbd|auto] [--workers N] [--queue-depth N] [--nbd-timeout S]\n"
      "      --workers N (1..16): N threads serve the device (nbd backend). auto (default):\n"
      "      the kernel loop, unless N > 1 and direct I/O is off or impossible -> nbd.\n"
      "      --queue-depth N: kernel loop request depth (queue/nr_requests, 4..hw_queue_depth).\n"
      "  list [--all]            devices set up by cxiosync (--all: also foreign ones)\n"
      "  show DEV\n"
      "  set DEV [--direct-io=on|off] [--block-size N] [--capacity] [--autoclear=on|off] "
      "[--force]\n"
      "  set DEV --queue-depth N | --workers N [--force]\n"
      "  detach DEV [--force]     (DEV: loopN or nbdN)\n"
      "  backends                which backends this kernel offers (loop, nbd, ublk)\n"
      "  reconcile               drop records of devices that are gone or no longer ours\n",
      code == 0 ? stdout : stderr);
  std::exit(code);
}

int fail(const Error& e) {
  return loopToolFail(e);
}

std::string owner(const LoopDeviceInfo& d) {
  if (!d.foreign && d.record) return "uid:" + std::to_string(d.record->uid);
  std::string g = foreignOwnerName(d.foreignOwner);
  return g.empty() ? "foreign" : "foreign:" + g;
}

template <class T>
Json orNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json infoJson(const LoopDeviceInfo& d) {
  const auto& k = d.kernel;
  Json w = {{"name", jsonBytes(d.path)},
            {"back-file", jsonBytes(k.backingFile)},
            {"offset", k.offset},
            {"sizelimit", k.sizeLimit},
            {"size", k.sizeBytes},
            {"ro", k.readOnly},
            {"autoclear", k.autoclear},
            {"partscan", k.partscan},
            {"dio", k.directIo},
            {"log-sec", k.logicalBlockSize},
            {"nr-requests", k.requestDepth},
            {"maj:min", k.devnum.str()},
            {"backing-dev", d.backingDevice ? Json(d.backingDevice->str()) : Json(nullptr)},
            {"backing-disk", d.backingDisk ? Json(d.backingDisk->str()) : Json(nullptr)},
            {"backing-inode", orNull(k.backingInode)}};
  addBlockInfoFields(w, KernelLoopBackend::toInfo(d));
  w["foreign"] = d.foreign;
  w["foreign-owner"] = foreignOwnerName(d.foreignOwner);
  w["setup-by-uid"] = d.record ? Json(d.record->uid) : Json(nullptr);
  if (d.record) {
    const auto& r = *d.record;
    w["created"] = r.createdUnix;
    w["requested"] = {{"read-only", r.options.readOnly},
                      {"offset", r.options.offset},
                      {"size-limit", r.options.sizeLimit},
                      {"autoclear", r.options.autoclear},
                      {"partscan", r.options.partscan},
                      {"block-size", r.options.blockSize},
                      {"direct-io", directIoModeName(r.options.directIo)}};
    w["block-size-source"] = blockSizeSourceName(r.blockSizeSource);
    w["direct-io-note"] = jsonBytes(r.directIoNote);
  }
  return w;
}

void printTable(const std::vector<LoopDeviceInfo>& devs) {
  std::printf("%-12s %-9s %-9s %-10s %-10s %2s %9s %3s %7s %-7s %7s %6s %s\n", "NAME", "MAJ:MIN",
              "BACK-DEV", "OFFSET", "SIZELIMIT", "RO", "AUTOCLEAR", "DIO", "LOG-SEC", "BACKEND",
              "WORKERS", "QDEPTH", "OWNER  BACK-FILE");
  for (const auto& d : devs) {
    const auto& k = d.kernel;
    std::string dio = k.directIo ? "1" : "0";
    if (d.record && !d.record->directIoNote.empty()) dio += "!";
    std::printf(
        "%-12s %-9s %-9s %-10llu %-10llu %2d %9d %3s %7u %-7s %7d %6u %s  %s\n", d.path.c_str(),
        k.devnum.str().c_str(), d.backingDevice ? d.backingDevice->str().c_str() : "-",
        static_cast<unsigned long long>(k.offset), static_cast<unsigned long long>(k.sizeLimit),
        k.readOnly ? 1 : 0, k.autoclear ? 1 : 0, dio.c_str(), k.logicalBlockSize, d.backend.c_str(),
        1, k.requestDepth, owner(d).c_str(), k.backingFile.c_str());
  }
  for (const auto& d : devs)
    if (d.record && !d.record->directIoNote.empty())
      std::printf("%s: direct I/O off: %s\n", d.name.c_str(), d.record->directIoNote.c_str());
}

void printShow(const LoopDeviceInfo& d) {
  const auto& k = d.kernel;
  std::printf("%s (%s)\n", d.path.c_str(), k.devnum.str().c_str());
  std::printf("  backing file:   %s\n", k.backingFile.c_str());
  std::printf("  backing device: %s (whole disk %s)\n",
              d.backingDevice ? d.backingDevice->str().c_str() : "none",
              d.backingDisk ? d.backingDisk->str().c_str() : "none");
  std::printf("  offset %llu, size limit %llu, size %llu bytes\n",
              static_cast<unsigned long long>(k.offset),
              static_cast<unsigned long long>(k.sizeLimit),
              static_cast<unsigned long long>(k.sizeBytes));
  std::printf("  read-only %s, autoclear %s, partscan %s\n", k.readOnly ? "yes" : "no",
              k.autoclear ? "yes" : "no", k.partscan ? "yes" : "no");
  std::printf("  direct I/O %s, logical block size %u, queue depth %u (nr_requests)\n",
              k.directIo ? "on" : "off", k.logicalBlockSize, k.requestDepth);
  std::printf(
      "  backend %s, workers 1 (the kernel loop has one worker per cgroup), up to %u "
      "backing I/Os in flight (%s)\n",
      d.backend.c_str(), k.directIo ? k.requestDepth : 1u,
      k.directIo ? "direct I/O: asynchronous" : "buffered: one at a time");
  std::printf("  owner: %s\n", owner(d).c_str());
  if (d.record) {
    const auto& r = *d.record;
    std::printf("  requested: direct-io=%s block-size=%u (chosen %u from %s)\n",
                directIoModeName(r.options.directIo), r.options.blockSize, r.blockSizeChosen,
                blockSizeSourceName(r.blockSizeSource));
    if (!r.directIoNote.empty())
      std::printf("  direct I/O off because: %s\n", r.directIoNote.c_str());
  }
}

void emit(const Global& g, const LoopDeviceInfo& d) {
  if (g.json) {
    std::cout << jsonDump(infoJson(d), 2) << "\n";
  } else {
    printShow(d);
  }
}

int cmdAdd(const Global& g, LoopManager& m, std::vector<std::string> args) {
  LoopOptions o;
  std::string file;
  std::vector<std::string> cmd;
  bool fdReadOnly = false;  // test aid: open the file read-only without asking for --read-only
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto val = [&](const std::string& name) -> std::string {
      if (a.size() > name.size() && a.compare(0, name.size() + 1, name + "=") == 0)
        return a.substr(name.size() + 1);
      if (i + 1 >= args.size()) usage(2);
      return args[++i];
    };
    auto is = [&](const std::string& name) {
      return a == name || a.compare(0, name.size() + 1, name + "=") == 0;
    };
    if (a == "--") {
      cmd.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    } else if (a == "--read-only" || a == "-r") {
      o.readOnly = true;
    } else if (a == "--autoclear") {
      o.autoclear = true;
    } else if (a == "--fd-read-only") {
      fdReadOnly = true;
    } else if (a == "--partscan" || a == "-P") {
      o.partscan = true;
    } else if (is("--offset") || a == "-o") {
      o.offset = loopToolSize("--offset", val("--offset"));
    } else if (is("--size") || is("--sizelimit")) {
      o.sizeLimit = loopToolSize("--size", val(is("--size") ? "--size" : "--sizelimit"));
    } else if (is("--block-size") || is("--sector-size")) {
      uint64_t v =
          loopToolSize("--block-size", val(is("--block-size") ? "--block-size" : "--sector-size"));
      if (v > UINT32_MAX) usage(2);
      o.blockSize = static_cast<uint32_t>(v);
    } else if (is("--direct-io")) {
      // As losetup: a bare --direct-io means on; otherwise --direct-io=auto|on|off.
      auto mode = parseDirectIoMode(a == "--direct-io" ? std::string("on") : a.substr(12));
      if (!mode) return fail(mode.error());
      o.directIo = *mode;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "cxiosync-loop: add: unknown option %s\n", a.c_str());
      return 2;
    } else if (file.empty()) {
      file = a;
    } else {
      usage(2);
    }
  }
  if (file.empty()) usage(2);
  if (o.autoclear && cmd.empty()) {
    std::fputs(
        "cxiosync-loop: --autoclear detaches the device when its last user closes it, so\n"
        "  it needs a command that uses it while this tool holds it open, e.g.\n"
        "  cxiosync-loop add --autoclear IMG -- mount {} /mnt\n"
        "  (or mount first and then: cxiosync-loop set DEV --autoclear=on)\n",
        stderr);
    return 2;
  }
  // Open the backing file the way losetup does: read-write unless asked otherwise, read-only
  // when the file or filesystem does not allow writing.
  int fd = ::open(file.c_str(), (o.readOnly || fdReadOnly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0 && !o.readOnly && (errno == EROFS || errno == EACCES || errno == EPERM))
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "cxiosync-loop: %s: %s\n", file.c_str(), std::strerror(errno));
    return 1;
  }
  auto r = m.setup(fd, o, g.uid);
  ::close(fd);
  if (!r) return fail(r.error());
  if (g.json) {
    Json notes = Json::array();
    for (const auto& n : r->notes) notes.push_back(jsonBytes(n));
    Json w = {{"device", infoJson(r->device)},
              {"used-loop-configure", r->usedLoopConfigure},
              {"attempts", r->attempts},
              {"direct-io-requested", r->directIoRequested},
              {"direct-io", r->directIoEffective},
              {"direct-io-note", jsonBytes(r->directIoNote)},
              {"block-size", r->blockSize},
              {"block-size-source", blockSizeSourceName(r->blockSizeSource)},
              {"notes", std::move(notes)}};
    std::cout << jsonDump(w, 2) << "\n";
  } else {
    std::printf("%s\n", r->device.path.c_str());
    for (const auto& n : r->notes) std::fprintf(stderr, "note: %s\n", n.c_str());
    if (r->directIoRequested && !r->directIoEffective)
      std::fprintf(stderr, "note: direct I/O is off: %s\n", r->directIoNote.c_str());
  }
  std::fflush(stdout);
  if (cmd.empty()) return 0;
  // Run the command while holding the device open.
  for (auto& c : cmd)
    for (size_t p; (p = c.find("{}")) != std::string::npos;) c.replace(p, 2, r->device.path);
  ::setenv("CXIOSYNC_LOOP_DEV", r->device.path.c_str(), 1);
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& c : cmd) argv.push_back(c.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "cxiosync-loop: %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int cmdSet(const Global& g, LoopManager& m, const std::vector<std::string>& args) {
  if (args.empty()) usage(2);
  const std::string dev = args[0];
  bool force = false;
  std::optional<bool> dio, autoclear;
  std::optional<uint32_t> bs;
  bool capacity = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--force") {
      force = true;
    } else if (a == "--capacity") {
      capacity = true;
    } else if (a.rfind("--direct-io=", 0) == 0) {
      auto mode = parseDirectIoMode(a.substr(12));
      if (!mode || *mode == DirectIoMode::Auto) {
        std::fputs("cxiosync-loop: set --direct-io takes on or off\n", stderr);
        return 2;
      }
      dio = *mode == DirectIoMode::On;
    } else if (a.rfind("--autoclear=", 0) == 0) {
      auto mode = parseDirectIoMode(a.substr(12));
      if (!mode || *mode == DirectIoMode::Auto) return 2;
      autoclear = *mode == DirectIoMode::On;
    } else if (a.rfind("--block-size=", 0) == 0) {
      bs = static_cast<uint32_t>(loopToolSize("--block-size", a.substr(13)));
    } else if (a == "--block-size" && i + 1 < args.size()) {
      bs = static_cast<uint32_t>(loopToolSize("--block-size", args[++i]));
    } else {
      std::fprintf(stderr, "cxiosync-loop: set: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (!dio && !bs && !capacity && !autoclear) usage(2);
  Result<LoopDeviceInfo> last = makeError("nothing done", EINVAL);
  if (bs) {
    last = m.setBlockSize(dev, *bs, g.uid, force);
    if (!last) return fail(last.error());
  }
  if (dio) {
    last = m.setDirectIO(dev, *dio, g.uid, force);
    if (!last) return fail(last.error());
  }
  if (capacity) {
    last = m.setCapacity(dev, g.uid, force);
    if (!last) return fail(last.error());
  }
  if (autoclear) {
    last = m.setAutoclear(dev, *autoclear, g.uid, force);
    if (!last) return fail(last.error());
    if (!last->kernel.bound) {
      std::printf("%s detached (autoclear set and nobody held it)\n", last->name.c_str());
      return 0;
    }
  }
  emit(g, *last);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Global g;
  std::vector<std::string> args(argv + 1, argv + argc);
  size_t i = 0;
  bool asUid = false;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= args.size()) usage(2);
      return args[++i];
    };
    if (a == "--json")
      g.json = true;
    else if (a == "--sys-root")
      g.mo.sysRoot = next();
    else if (a == "--dev-root")
      g.mo.devRoot = next();
    else if (a == "--run-dir")
      g.mo.runDir = next();
    else if (a == "--as-uid") {
      std::string v = next();
      uint32_t uid = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), uid);
      if (ec != std::errc{} || end != v.data() + v.size() || v.empty()) usage(2);
      g.uid = uid;
      asUid = true;
    } else if (a == "-h" || a == "--help")
      usage(0);
    else
      break;
  }
  if (asUid && ::getuid() != 0) {
    std::fputs("cxiosync-loop: --as-uid is for root only\n", stderr);
    return 2;
  }
  if (i >= args.size()) usage(2);
  const std::string cmd = args[i];
  std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());
  {
    BlockToolGlobal bg{g.json, g.mo, g.uid};
    int rc = blockToolCommand(bg, cmd, rest);
    if (rc >= 0) return rc;
  }
  auto mgr = LoopManager::create(g.mo);
  if (!mgr) return fail(mgr.error());
  LoopManager& m = **mgr;

  if (cmd == "add") return cmdAdd(g, m, rest);
  if (cmd == "set") return cmdSet(g, m, rest);
  if (cmd == "list") {
    bool all = !rest.empty() && (rest[0] == "--all" || rest[0] == "-a");
    auto l = m.list(all);
    if (!l) return fail(l.error());
    BlockToolGlobal bg{g.json, g.mo, g.uid};
    const auto nbds = listNbdDevices(bg, all);
    if (g.json) {
      Json loops = Json::array(), nbd = Json::array();
      for (const auto& d : *l) loops.push_back(infoJson(d));
      for (const auto& d : nbds) nbd.push_back(blockInfoJson(d));
      Json w = {{"loopdevices", std::move(loops)}, {"nbddevices", std::move(nbd)}};
      std::cout << jsonDump(w, 2) << "\n";
    } else {
      printTable(*l);
      if (!nbds.empty()) {
        std::printf("\n%-12s %-7s %7s %6s %3s %2s %s\n", "NAME", "BACKEND", "WORKERS", "QDEPTH",
                    "DIO", "RO", "OWNER  SERVER  BACK-FILE");
        printBlockRows(nbds);
      }
    }
    return 0;
  }
  if (cmd == "show") {
    if (rest.size() != 1) usage(2);
    auto d = m.show(rest[0]);
    if (!d) return fail(d.error());
    emit(g, *d);
    return 0;
  }
  if (cmd == "detach") {
    if (rest.empty()) usage(2);
    bool force = rest.size() > 1 && rest[1] == "--force";
    auto r = m.detach(rest[0], g.uid, force);
    if (!r) return fail(r.error());
    if (g.json) {
      Json w = {{"name", jsonBytes(r->name)},
                {"detached", r->detached},
                {"lazy", r->lazy},
                {"note", jsonBytes(r->note)}};
      std::cout << jsonDump(w, 2) << "\n";
    } else {
      if (r->lazy)
        std::printf("%s\n", r->note.c_str());
      else
        std::printf("%s detached\n", r->name.c_str());
    }
    return r->lazy ? 3 : 0;
  }
  if (cmd == "reconcile") {
    auto r = m.reconcile();
    if (!r) return fail(r.error());
    for (const auto& d : r->dropped) std::printf("dropped: %s\n", d.reason.c_str());
    std::printf("%zu record(s) kept\n", r->kept.size());
    return 0;
  }
  usage(2);
}
