// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/devices/backend_tool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

#include "policy/cli/command_line.h"
#include "policy/config/values.h"

namespace cxiosync {

using output::Cell;
using output::Column;
using output::Json;
using output::jsonDump;
using output::Table;
using Nest = output::Cell::Nest;

int loopToolFail(const Error& e) {
  std::fprintf(stderr, "cxiosync-loop: %s\n", e.message.c_str());
  return e.code == EPERM || e.code == EACCES ? 4 : 1;
}

int loopToolUsage(const std::string& command, const Error& e) {
  std::fprintf(stderr, "cxiosync-loop: %s%s%s\n", command.c_str(), command.empty() ? "" : ": ",
               e.message.c_str());
  return kLoopToolUsage;
}

namespace {

enum ToolOptionId : int {
  kOptReadOnly = 'r',
  kOptPartscan = 'P',
  kOptOffset = 'o',
  kOptSize = 256,
  kOptBlockSize,
  kOptDirectIo,
  kOptAutoclear,
  kOptFdReadOnly,
  kOptWorkers,
  kOptBackend,
  kOptQueueDepth,
  kOptNbdTimeout,
  kOptForce,
  kOptCapacity,
};

// Sizes as everywhere in cxiosync (policy parseSize: "4096", "1M", "1.5G", "512 KiB").
Result<uint64_t> sizeArg(const CliArg& a, uint64_t max = UINT64_MAX) {
  auto n = parseSize(*a.value);
  if (!n) return cliValueError(a, n.error().message);
  if (*n > max) return cliValueError(a, "'" + *a.value + "' is too large");
  return *n;
}

// A value parser's Result as the option's error ("--workers: ...").
template <typename T>
Result<T> named(const CliArg& a, Result<T> r) {
  if (!r) return cliValueError(a, r.error().message);
  return r;
}

Status applyBackendOption(AddArgs& out, const CliArg& a, const std::string& sysRoot) {
  BlockSetupOptions& o = out.setup;
  out.backendOptions = true;
  if (a.id == kOptWorkers) {
    auto w = named(a, parseWorkers(*a.value));
    if (!w) return w.error();
    o.workers = *w;
  } else if (a.id == kOptBackend) {
    auto b = named(a, parseBackendKind(*a.value));
    if (!b) return b.error();
    o.backend = *b;
  } else if (a.id == kOptQueueDepth) {
    auto q = named(a, parseQueueDepth(*a.value, loopHwQueueDepth(sysRoot)));
    if (!q) return q.error();
    o.loop.queueDepth = *q;
  } else {
    auto t = parseCliNumber(a, 1, 3600);
    if (!t) return t.error();
    o.nbdTimeoutSec = static_cast<uint32_t>(*t);
  }
  return Ok{};
}

Status applyAddOption(AddArgs& out, const CliArg& a, const std::string& sysRoot) {
  LoopOptions& o = out.setup.loop;
  switch (a.id) {
    case kOptReadOnly:
      o.readOnly = true;
      break;
    case kOptPartscan:
      o.partscan = true;
      break;
    case kOptAutoclear:
      o.autoclear = true;
      break;
    case kOptFdReadOnly:
      out.fdReadOnly = true;
      break;
    case kOptOffset:
    case kOptSize: {
      auto n = sizeArg(a);
      if (!n) return n.error();
      (a.id == kOptOffset ? o.offset : o.sizeLimit) = *n;
      break;
    }
    case kOptBlockSize: {
      auto n = sizeArg(a, UINT32_MAX);
      if (!n) return n.error();
      o.blockSize = static_cast<uint32_t>(*n);
      break;
    }
    case kOptDirectIo: {
      // As losetup: a bare --direct-io means on; otherwise --direct-io=auto|on|off.
      auto m = named(a, parseDirectIoMode(a.value.value_or("on")));
      if (!m) return m.error();
      o.directIo = *m;
      break;
    }
    case CliArg::kPositional:
      if (!out.file.empty())
        return makeError("one FILE only ('" + a.name + "' is a second)", EINVAL);
      out.file = a.name;
      break;
    default:
      return applyBackendOption(out, a, sysRoot);
  }
  return Ok{};
}

Status applySetOption(SetArgs& out, const CliArg& a, const std::string& sysRoot) {
  switch (a.id) {
    case kOptForce:
      out.force = true;
      break;
    case kOptCapacity:
      out.capacity = true;
      break;
    case kOptDirectIo: {
      auto m = parseDirectIoMode(a.value.value_or("on"));
      if (!m || *m == DirectIoMode::Auto)
        return cliValueError(a, "'" + a.value.value_or("") + "' is not on or off");
      out.directIo = *m == DirectIoMode::On;
      break;
    }
    case kOptAutoclear: {
      if (!a.value) return cliValueError(a, "takes on or off (--autoclear=on|off)");
      auto b = named(a, parseBoolean(*a.value));
      if (!b) return b.error();
      out.autoclear = *b;
      break;
    }
    case kOptBlockSize: {
      auto n = sizeArg(a, UINT32_MAX);
      if (!n) return n.error();
      out.blockSize = static_cast<uint32_t>(*n);
      break;
    }
    case kOptWorkers: {
      auto w = named(a, parseWorkers(*a.value));
      if (!w) return w.error();
      out.workers = *w;
      break;
    }
    case kOptQueueDepth: {
      auto q = named(a, parseQueueDepth(*a.value, loopHwQueueDepth(sysRoot)));
      if (!q) return q.error();
      out.queueDepth = *q;
      break;
    }
    case CliArg::kPositional:
      if (!out.dev.empty()) return makeError("one DEV only ('" + a.name + "' is a second)", EINVAL);
      out.dev = a.name;
      break;
    default:
      return makeError("option " + a.name + " does not apply to set", EINVAL);
  }
  return Ok{};
}

std::vector<option> toolOptions() {
  return {
      {"read-only", no_argument, nullptr, kOptReadOnly},
      {"partscan", no_argument, nullptr, kOptPartscan},
      {"offset", required_argument, nullptr, kOptOffset},
      {"size", required_argument, nullptr, kOptSize},
      {"sizelimit", required_argument, nullptr, kOptSize},  // losetup's name
      {"block-size", required_argument, nullptr, kOptBlockSize},
      {"sector-size", required_argument, nullptr, kOptBlockSize},  // losetup's name
      {"direct-io", optional_argument, nullptr, kOptDirectIo},
      {"autoclear", optional_argument, nullptr, kOptAutoclear},  // add: bare; set: =on|off
      {"fd-read-only", no_argument, nullptr, kOptFdReadOnly},
      {"workers", required_argument, nullptr, kOptWorkers},
      {"backend", required_argument, nullptr, kOptBackend},
      {"queue-depth", required_argument, nullptr, kOptQueueDepth},
      {"nbd-timeout", required_argument, nullptr, kOptNbdTimeout},
      {"force", no_argument, nullptr, kOptForce},
      {"capacity", no_argument, nullptr, kOptCapacity},
  };
}

}  // namespace

Result<AddArgs> parseAddArgs(const std::vector<std::string>& args, const std::string& sysRoot) {
  AddArgs out;
  CommandLine cl(args, "rPo:", toolOptions());
  while (true) {
    auto a = cl.next();
    if (!a) return a.error();
    if (!*a) break;
    const CliArg& arg = **a;
    if (arg.id == kOptAutoclear && arg.value)
      return cliValueError(arg, "takes no value here (set DEV --autoclear=on|off changes it)");
    if (arg.id == kOptForce || arg.id == kOptCapacity)
      return makeError("option " + arg.name + " does not apply to add", EINVAL);
    if (auto st = applyAddOption(out, arg, sysRoot); !st) return st.error();
  }
  out.command = cl.rest();
  if (out.file.empty()) return makeError("FILE missing", EINVAL);
  if (out.backendOptions && (out.setup.loop.autoclear || !out.command.empty()))
    return makeError(
        "--autoclear and -- CMD cannot be combined with --workers, --backend, --queue-depth "
        "or --nbd-timeout",
        EINVAL);
  if (out.setup.loop.autoclear && out.command.empty())
    return makeError(
        "--autoclear detaches the device when its last user closes it, so it needs a command "
        "that uses it while this tool holds it open: add --autoclear IMG -- mount {} /mnt (or "
        "mount first, then: set DEV --autoclear=on)",
        EINVAL);
  return out;
}

Result<UniqueFd> openBackingFile(const AddArgs& a) {
  const bool ro = a.setup.loop.readOnly || a.fdReadOnly;
  int fd = ::open(a.file.c_str(), (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0 && !a.setup.loop.readOnly && (errno == EROFS || errno == EACCES || errno == EPERM))
    fd = ::open(a.file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return makeError(a.file + ": " + std::strerror(errno), errno);
  return UniqueFd(fd);
}

Result<SetArgs> parseSetArgs(const std::vector<std::string>& args, const std::string& sysRoot) {
  SetArgs out;
  CommandLine cl(args, "", toolOptions());
  while (true) {
    auto a = cl.next();
    if (!a) return a.error();
    if (!*a) break;
    if (auto st = applySetOption(out, **a, sysRoot); !st) return st.error();
  }
  for (const auto& r : cl.rest()) {
    if (!out.dev.empty()) return makeError("one DEV only ('" + r + "' is a second)", EINVAL);
    out.dev = r;
  }
  if (out.dev.empty()) return makeError("DEV missing", EINVAL);
  if (out.backendSettings() && out.loopSettings())
    return makeError(
        "--workers and --queue-depth cannot be combined with the loop settings (give them in "
        "a separate set)",
        EINVAL);
  if (!out.backendSettings() && !out.loopSettings())
    return makeError(
        "nothing to change (--direct-io=on|off, --block-size N, --capacity, --autoclear=on|off, "
        "--queue-depth N, --workers N)",
        EINVAL);
  return out;
}

Result<DeviceArgs> parseDeviceArgs(const std::string& cmd, const std::vector<std::string>& args) {
  const bool takesDev = cmd == "show" || cmd == "detach";
  DeviceArgs out;
  CommandLine cl(args, "a",
                 {{"all", no_argument, nullptr, 'a'}, {"force", no_argument, nullptr, 'f'}});
  std::vector<std::string> positional;
  while (true) {
    auto a = cl.next();
    if (!a) return a.error();
    if (!*a) break;
    const CliArg& arg = **a;
    if (arg.id == CliArg::kPositional)
      positional.push_back(arg.name);
    else if (arg.id == 'a' && cmd == "list")
      out.all = true;
    else if (arg.id == 'f' && cmd == "detach")
      out.force = true;
    else
      return makeError("option " + arg.name + " does not apply to " + cmd, EINVAL);
  }
  for (auto& r : cl.rest()) positional.push_back(std::move(r));
  if (takesDev && positional.empty()) return makeError("DEV missing", EINVAL);
  if (positional.size() > (takesDev ? 1u : 0u))
    return makeError("unexpected argument '" + positional.back() + "'", EINVAL);
  if (takesDev) out.dev = positional[0];
  return out;
}

namespace {

int fail(const Error& e) {
  return loopToolFail(e);
}

bool isNbdName(const std::string& d) {
  return static_cast<bool>(parseNbdName(d));
}

NbdManagerOptions nbdOptions(const BlockToolGlobal& g) {
  NbdManagerOptions no;
  no.runDir = g.mo.runDir;
  no.sysRoot = g.mo.sysRoot;
  no.devRoot = g.mo.devRoot;
  return no;
}

Result<std::unique_ptr<BlockDevices>> open(const BlockToolGlobal& g) {
  BlockDevices::Options o;
  o.loop = g.mo;
  return BlockDevices::create(o);
}

void emitOne(const BlockToolGlobal& g, const BlockDeviceInfo& d) {
  if (g.json) {
    printJson(blockInfoTable({d}).rowJson(0));
  } else {
    printBlockShow(d);
  }
}

}  // namespace

int blockToolAdd(const BlockToolGlobal& g, const AddArgs& a, int backingFd) {
  auto bd = open(g);
  if (!bd) return fail(bd.error());
  // The tool is its own caller: server_cgroup=caller (the default under --as-uid N) is the
  // tool's cgroup.
  BlockSetupOptions so = a.setup;
  so.callerPid = ::getpid();
  auto r = (*bd)->setup(backingFd, so, g.uid);
  if (!r) return fail(r.error());
  if (g.json) {
    std::vector<Cell> notes;
    for (const auto& n : r->notes) notes.push_back(Cell::text(n));
    printJson(Table::record({{"device", Cell::nested(blockInfoTable({r->device}), Nest::Object)},
                             {"backend-reason", Cell::text(r->choice.reason)},
                             {"notes", Cell::list(std::move(notes))}})
                  .rowJson(0));
  } else {
    std::printf("%s\n", r->device.device.c_str());
    for (const auto& n : r->notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  }
  return 0;
}

int blockToolSet(const BlockToolGlobal& g, const SetArgs& a) {
  auto bd = open(g);
  if (!bd) return fail(bd.error());
  Result<BlockDeviceInfo> last = makeError("nothing to do", EINVAL);
  if (a.queueDepth) {
    last = (*bd)->setQueueDepth(a.dev, *a.queueDepth, g.uid, a.force);
    if (!last) return fail(last.error());
  }
  if (a.workers) {
    last = (*bd)->setWorkers(a.dev, *a.workers, g.uid, a.force);
    if (!last) return fail(last.error());
  }
  emitOne(g, *last);
  return 0;
}

void printJson(const Json& j) {
  std::cout << jsonDump(j, true) << "\n";
}

std::vector<Column> blockInfoColumns() {
  return {{"backend", "BACKEND"}, {"workers", "WORKERS", true},  {"queue-depth", "QDEPTH", true},
          {"in-flight-max", ""},  {"workers-settable-live", ""}, {"server-pid", ""},
          {"server-alive", ""},   {"server-cgroup", ""},         {"note", ""}};
}

std::vector<Cell> blockInfoCells(const BlockDeviceInfo& d) {
  const bool nbd = d.backend == BackendKind::Nbd;
  auto nbdOnly = [&](Cell c) { return nbd ? std::move(c) : Cell::absent(); };
  return {Cell::text(backendKindName(d.backend)),
          Cell::uinteger(d.workers),
          Cell::uinteger(d.queueDepth),
          Cell::uinteger(d.inFlightMax),
          Cell::boolean(d.workersSettable),
          nbdOnly(Cell::integer(d.serverPid)),
          nbdOnly(Cell::boolean(d.serverAlive)),
          nbdOnly(Cell::bytes(d.serverCgroup)),
          nbdOnly(Cell::text(d.note))};
}

namespace {

uint32_t ownerUid(const BlockDevice& d) {
  return d.setupByUid == kUnknownUid ? 0 : d.setupByUid;
}

enum BlockColumn : size_t { kPath, kBackFile, kSize, kRo, kDirectIo, kForeign, kSetupBy, kBackend };

}  // namespace

Table blockInfoTable(const std::vector<BlockDeviceInfo>& devs) {
  std::vector<Column> cols = {{"name", "NAME"},    {"back-file", "BACK-FILE"}, {"size", ""},
                              {"ro", "RO", true},  {"direct-io", "DIO", true}, {"foreign", ""},
                              {"setup-by-uid", ""}};
  for (auto& c : blockInfoColumns()) cols.push_back(std::move(c));
  const size_t note = cols.size();
  cols.push_back({"note", ""});  // where the kernel loop's note goes (nbd: with its fields)
  cols.push_back({"", "OWNER"});
  cols.push_back({"", "SERVER"});
  Table t(std::move(cols));
  t.display(
      {kPath, kBackend, kBackend + 1, kBackend + 2, kDirectIo, kRo, note + 1, note + 2, kBackFile});
  for (const auto& d : devs) {
    std::vector<Cell> row = {
        Cell::text(d.device),
        Cell::bytes(d.backingFile),
        Cell::uinteger(d.sizeBytes),
        Cell::boolean(d.readOnly, "1", "0"),
        Cell::boolean(d.directIo, "1", "0"),
        Cell::boolean(d.foreign),
        d.setupByUid == kUnknownUid ? Cell::null() : Cell::uinteger(d.setupByUid)};
    for (auto& c : blockInfoCells(d)) row.push_back(std::move(c));
    row.push_back(d.backend == BackendKind::Nbd ? Cell::absent() : Cell::text(d.note));
    row.push_back(Cell::text(d.foreign ? "foreign" : "uid:" + std::to_string(ownerUid(d))));
    row.push_back(
        Cell::text((d.serverAlive ? "server " : "DEAD server ") + std::to_string(d.serverPid)));
    t.addRow(std::move(row));
  }
  return t;
}

void printBlockRows(const std::vector<BlockDeviceInfo>& devs) {
  std::fputs(blockInfoTable(devs).render(true, false).c_str(), stdout);
  for (const auto& d : devs)
    if (!d.note.empty()) std::printf("%s: %s\n", d.name.c_str(), d.note.c_str());
}

void printBlockShow(const BlockDeviceInfo& d) {
  std::printf("%s\n", d.device.c_str());
  std::printf("  backend %s, workers %u, queue depth %u, up to %u backing I/Os in flight\n",
              backendKindName(d.backend), d.workers, d.queueDepth, d.inFlightMax);
  std::printf("  backing file:   %s\n", Cell::bytes(d.backingFile).human().c_str());
  std::printf("  size %llu bytes, read-only %s, direct I/O %s\n",
              static_cast<unsigned long long>(d.sizeBytes), d.readOnly ? "yes" : "no",
              d.directIo ? "on" : "off");
  if (d.backend == BackendKind::Nbd)
    std::printf("  server: pid %d, %s, cgroup %s (%s)\n", static_cast<int>(d.serverPid),
                d.serverAlive ? "running" : "DEAD", Cell::bytes(d.serverCgroup).human().c_str(),
                d.serverCgroupMode.empty() ? "?" : d.serverCgroupMode.c_str());
  std::printf("  owner: %s\n",
              d.foreign ? "foreign" : ("uid:" + std::to_string(ownerUid(d))).c_str());
  if (!d.note.empty()) std::printf("  note: %s\n", d.note.c_str());
}

std::vector<BlockDeviceInfo> listNbdDevices(const BlockToolGlobal& g, bool includeForeign) {
  NbdManager m(nbdOptions(g));
  auto l = m.list(includeForeign);
  return l ? *l : std::vector<BlockDeviceInfo>{};
}

int blockToolCommand(const BlockToolGlobal& g, const std::string& cmd, const DeviceArgs& args) {
  if (cmd == "backends") {
    auto a = detectBackends(g.mo.sysRoot, g.mo.devRoot);
    if (g.json) {
      auto rec = [](std::vector<std::pair<std::string, Cell>> f) {
        return Cell::nested(Table::record(std::move(f)), Nest::Object);
      };
      printJson(
          Table::record({{"loop", rec({{"available", Cell::boolean(a.loop)},
                                       {"note", Cell::text(a.loopNote)},
                                       {"hw-queue-depth", Cell::uinteger(a.loopHwQueueDepth)}})},
                         {"nbd", rec({{"available", Cell::boolean(a.nbd)},
                                      {"loaded", Cell::boolean(a.nbdLoaded)},
                                      {"note", Cell::text(a.nbdNote)},
                                      {"max-workers", Cell::integer(kMaxLoopWorkers)}})},
                         {"ublk", rec({{"available", Cell::boolean(a.ublk)},
                                       {"note", Cell::text(a.ublkNote)}})}})
              .rowJson(0));
    } else {
      std::printf("kernel loop: %s (%s; hw_queue_depth %u)\n", a.loop ? "yes" : "no",
                  a.loopNote.c_str(), a.loopHwQueueDepth);
      std::printf("nbd:         %s (%s; 1..%d workers)\n", a.nbd ? "yes" : "no", a.nbdNote.c_str(),
                  kMaxLoopWorkers);
      std::printf("ublk:        %s (%s)\n", a.ublk ? "yes" : "no", a.ublkNote.c_str());
    }
    return 0;
  }
  if ((cmd == "show" || cmd == "detach") && isNbdName(args.dev)) {
    NbdManager m(nbdOptions(g));
    if (cmd == "show") {
      auto d = m.show(args.dev);
      if (!d) return fail(d.error());
      emitOne(g, *d);
      return 0;
    }
    auto r = m.detach(args.dev, g.uid, args.force);
    if (!r) return fail(r.error());
    if (g.json) {
      printJson(Table::record({{"name", Cell::text(r->name)},
                               {"detached", Cell::boolean(r->detached)},
                               {"note", Cell::text(r->note)}})
                    .rowJson(0));
    } else {
      std::printf("%s %s%s%s\n", r->name.c_str(), r->detached ? "detached" : "NOT detached",
                  r->note.empty() ? "" : ": ", r->note.c_str());
    }
    return r->detached ? 0 : 1;
  }
  return -1;
}

}  // namespace cxiosync