// SPDX-License-Identifier: GPL-2.0-or-later
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
#include "policy/cli/command_line.h"
#include "policy/output/table.h"

using namespace cxiosync;
using output::Cell;
using output::Column;
using output::Table;

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

// What was asked at setup (the record), as the "requested" object.
Cell requested(const LoopDeviceInfo& d) {
  if (!d.record) return Cell::absent();
  const auto& o = d.record->options;
  return Cell::nested(Table::record({{"read-only", Cell::boolean(o.readOnly)},
                                     {"offset", Cell::uinteger(o.offset)},
                                     {"size-limit", Cell::uinteger(o.sizeLimit)},
                                     {"autoclear", Cell::boolean(o.autoclear)},
                                     {"partscan", Cell::boolean(o.partscan)},
                                     {"block-size", Cell::uinteger(o.blockSize)},
                                     {"direct-io", Cell::text(directIoModeName(o.directIo))}}),
                      Cell::Nest::Object);
}

std::vector<Cell> loopRow(const LoopDeviceInfo& d) {
  const auto& k = d.kernel;
  auto flag = [](bool b) { return Cell::boolean(b, "1", "0"); };
  auto devOrNull = [](const auto& dev) { return dev ? Cell::text(dev->str()) : Cell::null(); };
  std::string dio = k.directIo ? "1" : "0";
  if (d.record && !d.record->directIoNote.empty()) dio += "!";
  const auto* r = d.record ? &*d.record : nullptr;
  std::vector<Cell> row = {
      Cell::text(d.path),
      Cell::bytes(k.backingFile),
      Cell::uinteger(k.offset),
      Cell::uinteger(k.sizeLimit),
      Cell::uinteger(k.sizeBytes),
      flag(k.readOnly),
      flag(k.autoclear),
      flag(k.partscan),
      flag(k.directIo).shown(dio),
      Cell::uinteger(k.logicalBlockSize),
      Cell::uinteger(k.requestDepth),
      Cell::text(k.devnum.str()),
      devOrNull(d.backingDevice).shown(d.backingDevice ? d.backingDevice->str() : "-"),
      devOrNull(d.backingDisk),
      k.backingInode ? Cell::uinteger(*k.backingInode) : Cell::null()};
  for (auto& c : blockInfoCells(KernelLoopBackend::toInfo(d))) row.push_back(std::move(c));
  std::vector<Cell> tail = {
      Cell::boolean(d.foreign),
      Cell::text(foreignOwnerName(d.foreignOwner)),
      r ? Cell::uinteger(r->uid) : Cell::null(),
      r ? Cell::integer(static_cast<int64_t>(r->createdUnix)) : Cell::absent(),
      requested(d),
      r ? Cell::text(blockSizeSourceName(r->blockSizeSource)) : Cell::absent(),
      r ? Cell::text(r->directIoNote) : Cell::absent(),
      Cell::text(owner(d))};
  for (auto& c : tail) row.push_back(std::move(c));
  return row;
}

// The loop devices' one table: the --json records (losetup's key names) and list's columns.
Table loopTable(const std::vector<LoopDeviceInfo>& devs) {
  std::vector<Column> cols = {{"name", "NAME"},
                              {"back-file", "BACK-FILE"},
                              {"offset", "OFFSET", true},
                              {"sizelimit", "SIZELIMIT", true},
                              {"size", ""},
                              {"ro", "RO", true},
                              {"autoclear", "AUTOCLEAR", true},
                              {"partscan", ""},
                              {"dio", "DIO", true},
                              {"log-sec", "LOG-SEC", true},
                              {"nr-requests", "QDEPTH", true},
                              {"maj:min", "MAJ:MIN"},
                              {"backing-dev", "BACK-DEV"},
                              {"backing-disk", ""},
                              {"backing-inode", ""}};
  const size_t block = cols.size();
  for (auto& c : blockInfoColumns()) cols.push_back(std::move(c));
  const size_t tail = cols.size();
  for (const char* key : {"foreign", "foreign-owner", "setup-by-uid", "created", "requested",
                          "block-size-source", "direct-io-note"}) {
    cols.push_back({key, ""});
  }
  cols.push_back({"", "OWNER"});
  Table t(std::move(cols));
  t.display({0, 11, 12, 2, 3, 5, 6, 8, 9, block, block + 1, 10, tail + 7, 1});
  for (const auto& d : devs) t.addRow(loopRow(d));
  return t;
}

void printTable(const std::vector<LoopDeviceInfo>& devs) {
  std::fputs(loopTable(devs).render(true, false).c_str(), stdout);
  for (const auto& d : devs)
    if (d.record && !d.record->directIoNote.empty())
      std::printf("%s: direct I/O off: %s\n", d.name.c_str(), d.record->directIoNote.c_str());
}

void printShow(const LoopDeviceInfo& d) {
  const auto& k = d.kernel;
  std::printf("%s (%s)\n", d.path.c_str(), k.devnum.str().c_str());
  std::printf("  backing file:   %s\n", Cell::bytes(k.backingFile).human().c_str());
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
      "  backend kernel, workers 1 (the kernel loop has one worker per cgroup), up to %u "
      "backing I/Os in flight (%s)\n",
      k.directIo ? k.requestDepth : 1u,
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
    printJson(loopTable({d}).rowJson(0));
  } else {
    printShow(d);
  }
}

BlockToolGlobal blockGlobal(const Global& g) {
  return BlockToolGlobal{g.json, g.mo, g.uid};
}

// Runs CMD ARGS... ({} and $CXIOSYNC_LOOP_DEV: the device) while this tool holds it open.
int runHolding(std::vector<std::string> cmd, const std::string& device) {
  for (auto& c : cmd)
    for (size_t p; (p = c.find("{}")) != std::string::npos;) c.replace(p, 2, device);
  ::setenv("CXIOSYNC_LOOP_DEV", device.c_str(), 1);
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

void printAdded(const Global& g, const LoopSetupResult* r) {
  if (g.json) {
    std::vector<Cell> notes;
    for (const auto& n : r->notes) notes.push_back(Cell::text(n));
    printJson(
        Table::record({{"device", Cell::nested(loopTable({r->device}), Cell::Nest::Object)},
                       {"used-loop-configure", Cell::boolean(r->usedLoopConfigure)},
                       {"attempts", Cell::integer(r->attempts)},
                       {"direct-io-requested", Cell::boolean(r->directIoRequested)},
                       {"direct-io", Cell::boolean(r->directIoEffective)},
                       {"direct-io-note", Cell::text(r->directIoNote)},
                       {"block-size", Cell::uinteger(r->blockSize)},
                       {"block-size-source", Cell::text(blockSizeSourceName(r->blockSizeSource))},
                       {"notes", Cell::list(std::move(notes))}})
            .rowJson(0));
  } else {
    std::printf("%s\n", r->device.path.c_str());
    for (const auto& n : r->notes) std::fprintf(stderr, "note: %s\n", n.c_str());
    if (r->directIoRequested && !r->directIoEffective)
      std::fprintf(stderr, "note: direct I/O is off: %s\n", r->directIoNote.c_str());
  }
  std::fflush(stdout);
}

// One add for every backend: the kernel loop through LoopManager (autoclear, -- CMD), any
// backend through BlockDevices when a backend option was given.
int cmdAdd(const Global& g, const std::vector<std::string>& args) {
  auto a = parseAddArgs(args, g.mo.sysRoot);
  if (!a) return loopToolUsage("add", a.error());
  auto fd = openBackingFile(*a);
  if (!fd) {
    std::fprintf(stderr, "cxiosync-loop: %s\n", fd.error().message.c_str());
    return 1;
  }
  if (a->backendOptions) return blockToolAdd(blockGlobal(g), *a, fd->get());
  auto mgr = LoopManager::create(g.mo);
  if (!mgr) return fail(mgr.error());
  auto r = (*mgr)->setup(fd->get(), a->setup.loop, g.uid);
  fd->reset();
  if (!r) return fail(r.error());
  printAdded(g, &*r);
  if (a->command.empty()) return 0;
  return runHolding(a->command, r->device.path);
}

int cmdSet(const Global& g, const std::vector<std::string>& args) {
  auto a = parseSetArgs(args, g.mo.sysRoot);
  if (!a) return loopToolUsage("set", a.error());
  if (a->backendSettings()) return blockToolSet(blockGlobal(g), *a);
  if (parseNbdName(a->dev))
    return loopToolUsage("set", makeError("an nbd device has no loop settings (only --workers, "
                                          "which needs a reconnect)"));
  auto mgr = LoopManager::create(g.mo);
  if (!mgr) return fail(mgr.error());
  LoopManager& m = **mgr;
  const std::string& dev = a->dev;
  const bool force = a->force;
  const std::optional<uint32_t>& bs = a->blockSize;
  const std::optional<bool>&dio = a->directIo, &autoclear = a->autoclear;
  Result<LoopDeviceInfo> last = makeError("nothing done", EINVAL);
  if (bs) {
    last = m.setBlockSize(dev, *bs, g.uid, force);
    if (!last) return fail(last.error());
  }
  if (dio) {
    last = m.setDirectIO(dev, *dio, g.uid, force);
    if (!last) return fail(last.error());
  }
  if (a->capacity) {
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

// GLOBAL options, up to the command: rest() is COMMAND ARGS...
Result<std::vector<std::string>> parseGlobal(const std::vector<std::string>& args, Global& g) {
  enum : int { kJson = 256, kSysRoot, kDevRoot, kRunDir, kAsUid };
  CommandLine cl(args, "h",
                 {{"json", no_argument, nullptr, kJson},
                  {"sys-root", required_argument, nullptr, kSysRoot},
                  {"dev-root", required_argument, nullptr, kDevRoot},
                  {"run-dir", required_argument, nullptr, kRunDir},
                  {"as-uid", required_argument, nullptr, kAsUid},
                  {"help", no_argument, nullptr, 'h'}},
                 CommandLine::Order::StopAtPositional);
  while (true) {
    auto a = cl.next();
    if (!a) return a.error();
    if (!*a) break;
    const CliArg& arg = **a;
    switch (arg.id) {
      case 'h':
        usage(0);
      case kJson:
        g.json = true;
        break;
      case kSysRoot:
        g.mo.sysRoot = *arg.value;
        break;
      case kDevRoot:
        g.mo.devRoot = *arg.value;
        break;
      case kRunDir:
        g.mo.runDir = *arg.value;
        break;
      case kAsUid: {
        auto uid = parseCliNumber(arg, 0, UINT32_MAX - 1);
        if (!uid) return uid.error();
        if (::getuid() != 0) return makeError("--as-uid is for root only", EINVAL);
        g.uid = static_cast<uint32_t>(*uid);
        break;
      }
    }
  }
  return cl.rest();
}

int cmdList(const Global& g, LoopManager& m, bool all) {
  auto l = m.list(all);
  if (!l) return fail(l.error());
  BlockToolGlobal bg{g.json, g.mo, g.uid};
  const auto nbds = listNbdDevices(bg, all);
  if (g.json) {
    printJson(Table::record({{"loopdevices", Cell::nested(loopTable(*l))},
                             {"nbddevices", Cell::nested(blockInfoTable(nbds))}})
                  .rowJson(0));
  } else {
    printTable(*l);
    if (!nbds.empty()) {
      std::printf("\n");
      printBlockRows(nbds);
    }
  }
  return 0;
}

int cmdShow(const Global& g, LoopManager& m, const DeviceArgs& a) {
  auto d = m.show(a.dev);
  if (!d) return fail(d.error());
  emit(g, *d);
  return 0;
}

int cmdDetach(const Global& g, LoopManager& m, const DeviceArgs& a) {
  auto r = m.detach(a.dev, g.uid, a.force);
  if (!r) return fail(r.error());
  if (g.json) {
    printJson(Table::record({{"name", Cell::text(r->name)},
                             {"detached", Cell::boolean(r->detached)},
                             {"lazy", Cell::boolean(r->lazy)},
                             {"note", Cell::text(r->note)}})
                  .rowJson(0));
  } else {
    if (r->lazy)
      std::printf("%s\n", r->note.c_str());
    else
      std::printf("%s detached\n", r->name.c_str());
  }
  return r->lazy ? 3 : 0;
}

int cmdReconcile(LoopManager& m) {
  auto r = m.reconcile();
  if (!r) return fail(r.error());
  for (const auto& d : r->dropped) std::printf("dropped: %s\n", d.reason.c_str());
  std::printf("%zu record(s) kept\n", r->kept.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Global g;
  auto rest = parseGlobal(std::vector<std::string>(argv + 1, argv + argc), g);
  if (!rest) return loopToolUsage("", rest.error());
  if (rest->empty()) usage(kLoopToolUsage);
  const std::string cmd = rest->front();
  const std::vector<std::string> args(rest->begin() + 1, rest->end());
  if (cmd == "add") return cmdAdd(g, args);
  if (cmd == "set") return cmdSet(g, args);
  if (cmd != "list" && cmd != "show" && cmd != "detach" && cmd != "reconcile" && cmd != "backends")
    return loopToolUsage("", makeError("unknown command '" + cmd + "' (see --help)"));
  auto a = parseDeviceArgs(cmd, args);
  if (!a) return loopToolUsage(cmd, a.error());
  if (int rc = blockToolCommand(blockGlobal(g), cmd, *a); rc >= 0) return rc;
  auto mgr = LoopManager::create(g.mo);
  if (!mgr) return fail(mgr.error());
  if (cmd == "list") return cmdList(g, **mgr, a->all);
  if (cmd == "show") return cmdShow(g, **mgr, *a);
  if (cmd == "detach") return cmdDetach(g, **mgr, *a);
  return cmdReconcile(**mgr);
}
