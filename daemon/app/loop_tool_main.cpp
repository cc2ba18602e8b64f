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
#include "policy/json_writer.h"

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

void writeInfo(JsonWriter& w, const LoopDeviceInfo& d) {
  const auto& k = d.kernel;
  w.beginObject();
  w.key("name").value(d.path);
  w.key("back-file").value(k.backingFile);
  w.key("offset").value(k.offset);
  w.key("sizelimit").value(k.sizeLimit);
  w.key("size").value(k.sizeBytes);
  w.key("ro").value(k.readOnly);
  w.key("autoclear").value(k.autoclear);
  w.key("partscan").value(k.partscan);
  w.key("dio").value(k.directIo);
  w.key("log-sec").value(k.logicalBlockSize);
  w.key("nr-requests").value(k.requestDepth);
  w.key("maj:min").value(k.devnum.str());
  w.key("backing-dev");
  if (d.backingDevice)
    w.value(d.backingDevice->str());
  else
    w.null();
  w.key("backing-disk");
  if (d.backingDisk)
    w.value(d.backingDisk->str());
  else
    w.null();
  w.key("backing-inode");
  if (k.backingInode)
    w.value(*k.backingInode);
  else
    w.null();
  {
    BlockDeviceInfo b = KernelLoopBackend::toInfo(d);
    writeBlockInfoFields(w, b);
  }
  w.key("foreign").value(d.foreign);
  w.key("foreign-owner").value(foreignOwnerName(d.foreignOwner));
  w.key("setup-by-uid");
  if (d.record)
    w.value(d.record->uid);
  else
    w.null();
  if (d.record) {
    const auto& r = *d.record;
    w.key("created").value(r.createdUnix);
    w.key("requested").beginObject();
    w.key("read-only").value(r.options.readOnly);
    w.key("offset").value(r.options.offset);
    w.key("size-limit").value(r.options.sizeLimit);
    w.key("autoclear").value(r.options.autoclear);
    w.key("partscan").value(r.options.partscan);
    w.key("block-size").value(r.options.blockSize);
    w.key("direct-io").value(directIoModeName(r.options.directIo));
    w.endObject();
    w.key("block-size-source").value(blockSizeSourceName(r.blockSizeSource));
    w.key("direct-io-note").value(r.directIoNote);
  }
  w.endObject();
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
    JsonWriter w;
    writeInfo(w, d);
    std::cout << w.str() << "\n";
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
    JsonWriter w;
    w.beginObject().key("device");
    writeInfo(w, r->device);
    w.key("used-loop-configure").value(r->usedLoopConfigure);
    w.key("attempts").value(r->attempts);
    w.key("direct-io-requested").value(r->directIoRequested);
    w.key("direct-io").value(r->directIoEffective);
    w.key("direct-io-note").value(r->directIoNote);
    w.key("block-size").value(r->blockSize);
    w.key("block-size-source").value(blockSizeSourceName(r->blockSizeSource));
    w.key("notes").beginArray();
    for (const auto& n : r->notes) w.value(n);
    w.endArray().endObject();
    std::cout << w.str() << "\n";
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
    JsonWriter w;
    w.beginObject().key("loopdevices").beginArray();
    for (const auto& d : *l) writeInfo(w, d);
    w.endArray().key("nbddevices").beginArray();
    for (const auto& d : nbds) writeBlockInfo(w, d);
    w.endArray().endObject();
    std::cout << w.str() << "\n";
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
    JsonWriter w;
    w.beginObject().key("name").value(r->name).key("detached").value(r->detached);
    w.key("lazy").value(r->lazy).key("note").value(r->note).endObject();
    std::cout << w.str() << "\n";
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
