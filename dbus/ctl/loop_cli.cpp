// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/loop_cli.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dbus/ctl/format.h"
#include "dbus/loop_props.h"
#include "dbus/loop_wire.h"

namespace cxiosync::ctl {

namespace {

Error invalid(std::string m) {
  return makeError(std::move(m), EINVAL);
}

std::string userName(uint32_t uid) {
  struct passwd pw {};
  struct passwd* res = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) return res->pw_name;
  return std::to_string(uid);
}

std::string owner(const dbus::LoopInfo& d) {
  if (d.foreign) return d.foreignOwner.empty() ? "foreign" : "foreign:" + d.foreignOwner;
  if (d.setupByUid == dbus::kUnknownUid) return "?";
  return userName(d.setupByUid);
}

std::string dio(const dbus::LoopInfo& d) {
  if (d.directIo) return "1";
  return d.directIoNote.empty() ? "0" : "0!";
}

const char* const kAddFlags =
    "--read-only, --offset, --size, --block-size, --direct-io, "
    "--autoclear, --partscan, --backend, --workers, --queue-depth, --nbd-timeout, "
    "--server-cgroup";

}  // namespace

std::string loopUsage() {
  return "  loop add FILE [--read-only] [--offset N] [--size N] [--block-size N]\n"
         "           [--direct-io=auto|on|off] [--autoclear] [--partscan]\n"
         "           [--backend=kernel|nbd|auto] [--workers N] [--queue-depth N]\n"
         "           [--nbd-timeout SEC] [--server-cgroup=caller|daemon] [-- CMD ARGS...]\n"
         "  loop list [--all]\n"
         "  loop show DEV\n"
         "  loop set DEV [--direct-io=on|off] [--block-size N] [--capacity]\n"
         "           [--workers N] [--queue-depth N] [--force]\n"
         "  loop detach DEV [--force]\n";
}

Result<std::string> loopNameArg(const std::string& arg) {
  std::string s = arg;
  if (s.rfind("/dev/", 0) == 0) s = s.substr(5);
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) s = "loop" + s;
  if (!dbus::wire::validLoopName(s)) {
    return invalid("'" + arg + "' is not a loop device (loopN, /dev/loopN, N, nbdN or /dev/nbdN)");
  }
  return s;
}

Status checkLoopArgs(const Invocation& inv) {
  const auto& a = inv.args;
  const auto& f = inv.options.loop;
  const std::string sub = a.empty() ? "" : a[0];
  auto usage = [&]() { return invalid("usage:\n" + loopUsage()); };
  const bool addFlags = f.readOnly || f.autoclear || f.partscan || f.offset || f.size ||
                        f.backend || f.nbdTimeout || f.serverCgroup;
  const bool setFlags = f.directIo || f.blockSize || f.capacity || f.workers || f.queueDepth;
  if (sub == "add") {
    if (a.size() < 2) return usage();
    if (f.all || f.capacity || f.force) return invalid("loop add takes " + std::string(kAddFlags));
  } else if (sub == "list") {
    if (a.size() != 1) return usage();
    if (addFlags || setFlags || f.force) return invalid("loop list takes only --all");
  } else if (sub == "show") {
    if (a.size() != 2) return usage();
    if (f.any()) return invalid("loop show takes no options");
  } else if (sub == "set") {
    if (a.size() != 2) return usage();
    if (addFlags || f.all) {
      return invalid(
          "loop set takes --direct-io=on|off, --block-size N, --capacity, --workers N, "
          "--queue-depth N, --force");
    }
    if (!setFlags) {
      return invalid(
          "loop set: nothing to change (--direct-io=on|off, --block-size N, --capacity, "
          "--workers N, --queue-depth N)");
    }
    if (f.directIo && *f.directIo != "on" && *f.directIo != "off") {
      return invalid("loop set: --direct-io takes on or off, not '" + *f.directIo + "'");
    }
  } else if (sub == "detach") {
    if (a.size() != 2) return usage();
    if (addFlags || f.all || setFlags) return invalid("loop detach takes only --force");
  } else {
    return usage();
  }
  if (sub != "add" && sub != "list") {
    if (auto n = loopNameArg(a[1]); !n) return n.error();
  }
  if (sub == "add") {
    if (f.directIo && !directIoModeFromName(*f.directIo)) {
      return invalid("--direct-io takes auto, on or off, not '" + *f.directIo + "'");
    }
    if (f.autoclear && a.size() < 3) {
      return invalid(
          "loop add --autoclear: an autoclear device detaches when its last user closes it, "
          "and cxiosyncctl's own handle closes when it exits; give a command to run while "
          "holding the device: loop add FILE --autoclear -- CMD ARGS... ({} is replaced by "
          "the device)");
    }
  }
  return Ok{};
}

namespace {

enum class LoopView { List, Show };

enum LoopColumn : size_t {
  kName,
  kDevice,
  kBackingFile,
  kOffset,
  kSizeLimit,
  kSize,
  kReadOnly,
  kAutoclear,
  kPartscan,
  kDirectIo,
  kDirectIoMode,
  kDirectIoNote,
  kBlockSize,
  kBlockSizeSource,
  kSetupByUid,
  kSetupRealtime,
  kForeign,
  kForeignOwner,
  kBackingDevice,
  kBackingDisk,
  kRequestDepth,
  kBackend,
  kWorkers,
  kQueueDepth,
  kWorkersSettable,
  kQueueDepthSettable,
  kServerCgroup,
  kOwner,
  kSetUpBy,
  kNoteLine
};

// One device's cells; `show` picks the show view's human texts.
std::vector<Cell> loopRow(const dbus::LoopInfo& d, bool show) {
  auto flag = [&](bool b) { return show ? Cell::boolean(b) : Cell::boolean(b, "1", "0"); };
  Cell sizeLimit = Cell::uinteger(d.sizeLimit);
  if (show && !d.sizeLimit) sizeLimit.shown("0 (to the end of the file)");
  Cell directIo = Cell::boolean(d.directIo, "on", "off");
  const std::string mode = dbus::wire::wireValue(d.directIoMode);
  if (show && !mode.empty()) {
    directIo.shown(std::string(d.directIo ? "on" : "off") + " (asked: " + mode + ")");
  }
  if (!show) directIo.shown(dio(d));
  Cell blockSize = Cell::uinteger(d.blockSize);
  if (show && !d.blockSizeSource.empty()) {
    blockSize.shown(std::to_string(d.blockSize) + " (" + d.blockSizeSource + ")");
  }
  Cell backingDevice = Cell::textOrNull(d.backingDevice);
  if (d.backingDevice.empty()) backingDevice.hidden();
  if (!d.backingDisk.empty() && d.backingDisk != d.backingDevice) {
    backingDevice.shown(d.backingDevice + " (disk " + d.backingDisk + ")");
  }
  Cell ownerCell =
      Cell::text(show ? "foreign" + (d.foreignOwner.empty() ? "" : " (" + d.foreignOwner + ")") +
                            ": not set up by cxiosync, changed only by root with --force"
                      : owner(d));
  if (show && !d.foreign) ownerCell.hidden();
  std::string who = "uid " + std::to_string(d.setupByUid) + " (" + userName(d.setupByUid) + ")";
  if (d.setupRealtimeUsec) who += ", " + formatTimestamp(d.setupRealtimeUsec);
  Cell setUpBy = d.foreign || !show ? Cell::null().hidden() : Cell::text(who);
  Cell workers = Cell::uinteger(d.workers);
  if (show && d.backend == BackendKind::Kernel)
    workers.shown(std::to_string(d.workers) + " (per cgroup)");
  Cell serverCgroup = Cell::textOrNull(d.serverCgroup);
  if (d.serverCgroup.empty()) serverCgroup.hidden();
  Cell noteLine = Cell::text(d.directIoNote);
  if (d.directIoNote.empty()) noteLine.hidden();
  return {Cell::text(d.name),
          Cell::text(d.device),
          Cell::text(d.backingFile),
          Cell::uinteger(d.offset),
          std::move(sizeLimit),
          Cell::size(d.sizeBytes),
          flag(d.readOnly),
          flag(d.autoclear),
          flag(d.partscan),
          std::move(directIo),
          Cell::textOrNull(mode),
          Cell::textOrNull(d.directIoNote),
          std::move(blockSize),
          Cell::textOrNull(d.blockSizeSource),
          d.setupByUid == dbus::kUnknownUid ? Cell::null() : Cell::uinteger(d.setupByUid),
          d.setupRealtimeUsec ? Cell::uinteger(d.setupRealtimeUsec) : Cell::null(),
          Cell::boolean(d.foreign),
          Cell::textOrNull(d.foreignOwner),
          std::move(backingDevice),
          Cell::textOrNull(d.backingDisk),
          Cell::uinteger(d.requestDepth),
          Cell::text(backendKindName(d.backend)),
          std::move(workers),
          Cell::uinteger(d.queueDepth),
          Cell::boolean(d.workersSettable),
          Cell::boolean(d.queueDepthSettable),
          std::move(serverCgroup),
          std::move(ownerCell),
          std::move(setUpBy),
          std::move(noteLine)};
}

// cxiosyncctl loop's one table: the JSON record (snake_case, IDL order) and the list
// (losetup's columns) or show view of the same cells.
Table loopTable(const std::vector<dbus::LoopInfo>& list, LoopView view) {
  const bool show = view == LoopView::Show;
  auto h = [&](const char* listHeader, const char* showHeader) {
    return std::string(show ? showHeader : listHeader);
  };
  Table t({{"name", ""},
           {"device", h("NAME", "")},
           {"backing_file", h("BACK-FILE", "Backing file")},
           {"offset", h("OFFSET", "Offset"), true},
           {"size_limit", h("SIZELIMIT", "Size limit"), true},
           {"size", h("", "Size")},
           {"read_only", h("RO", "Read-only"), true},
           {"autoclear", h("AUTOCLEAR", "Autoclear"), true},
           {"partscan", h("", "Part scan")},
           {"direct_io", h("DIO", "Direct I/O"), true},
           {"direct_io_mode", ""},
           {"direct_io_note", ""},
           {"block_size", h("LOG-SEC", "Block size"), true},
           {"block_size_source", ""},
           {"setup_by_uid", ""},
           {"setup_realtime_usec", ""},
           {"foreign", ""},
           {"foreign_owner", ""},
           {"backing_device", h("", "Backing device")},
           {"backing_disk", ""},
           {"request_depth", ""},
           {"backend", h("BACKEND", "Backend")},
           {"workers", h("WORKERS", "Workers"), true},
           {"queue_depth", h("QDEPTH", "Queue depth"), true},
           {"workers_settable", ""},
           {"queue_depth_settable", ""},
           {"server_cgroup", h("", "Server cgroup")},
           {"", h("OWNER", "Owner")},
           {"", "Set up by"},
           {"", ""}});
  if (show) {
    t.display({kBackingFile, kBackingDevice, kOffset, kSizeLimit, kSize, kReadOnly, kAutoclear,
               kPartscan, kDirectIo, kNoteLine, kBlockSize, kOwner, kSetUpBy, kBackend, kWorkers,
               kQueueDepth, kServerCgroup});
  } else {
    t.display({kDevice, kBackingFile, kOffset, kSizeLimit, kReadOnly, kAutoclear, kDirectIo,
               kBlockSize, kBackend, kWorkers, kQueueDepth, kOwner});
  }
  for (const auto& d : list) t.addRow(loopRow(d, show));
  return t;
}

}  // namespace

Json loopJson(const dbus::LoopInfo& d) {
  return Json(loopTable({d}, LoopView::Show).rowJson(0));
}

Json loopsJson(const std::vector<dbus::LoopInfo>& list) {
  return Json(loopTable(list, LoopView::List).json());
}

std::string loopsText(const std::vector<dbus::LoopInfo>& list, bool legend, bool bold) {
  std::string out = loopTable(list, LoopView::List).render(legend, bold);
  if (legend) {
    for (const auto& d : list) {
      if (!d.directIo && !d.directIoNote.empty()) {
        out += d.name + ": direct I/O off: " + d.directIoNote + "\n";
      }
    }
    out += "\n" + std::to_string(list.size()) + " loop device" + (list.size() == 1 ? "" : "s") +
           " listed.\n";
  }
  return out;
}

std::string loopText(const dbus::LoopInfo& d) {
  return d.device + "\n" + loopTable({d}, LoopView::Show).renderShow(16, false);
}

namespace {

class LoopRunner {
 public:
  LoopRunner(const Invocation& inv, const Io& io, const std::function<dbus::Client&()>& client)
      : inv_(inv), o_(inv.options), f_(inv.options.loop), io_(io), client_(client) {}

  int run() {
    const std::string& sub = inv_.args[0];
    if (sub == "add") return add();
    if (sub == "list") return list();
    if (sub == "show") return show();
    if (sub == "set") return set();
    return detach();
  }

 private:
  bool json() const { return o_.json != JsonMode::Off; }
  void printJson(const Json& j) const { io_.out(j.dump(o_.json == JsonMode::Pretty) + "\n"); }
  void say(const std::string& line) const {
    if (!o_.quiet) io_.out(line + "\n");
  }
  int fail(int code, const std::string& m) const {
    io_.err(m + "\n");
    return code;
  }
  dbus::Client::LoopRequest req() const { return {!o_.noAskPassword, f_.force}; }
  std::string name() const { return *loopNameArg(inv_.args[1]); }

  int add() {
    const std::string& file = inv_.args[1];
    dbus::LoopSetupOptions opt;
    opt.readOnly = f_.readOnly;
    opt.autoclear = f_.autoclear;
    opt.partscan = f_.partscan;
    if (f_.offset) opt.offset = *f_.offset;
    if (f_.size) opt.sizeLimit = *f_.size;
    if (f_.blockSize) opt.blockSize = *f_.blockSize;
    // checkLoopArgs and the option parser let only these names through.
    if (f_.directIo) opt.directIo = directIoModeFromName(*f_.directIo).value_or(DirectIoMode::Auto);
    if (f_.backend) opt.backend = backendKindFromName(*f_.backend).value_or(BackendKind::Auto);
    if (f_.workers) opt.workers = *f_.workers;
    if (f_.queueDepth) opt.queueDepth = *f_.queueDepth;
    if (f_.nbdTimeout) opt.nbdTimeoutSec = *f_.nbdTimeout;
    if (f_.serverCgroup) opt.serverCgroup = *f_.serverCgroup;
    // The caller's rights count: we open the file, the daemon never does.
    int fd = ::open(file.c_str(), (f_.readOnly ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      int e = errno;
      return fail(e == EACCES || e == EPERM || e == EROFS ? kExitPermission : kExitFailure,
                  "Cannot open " + file +
                      (f_.readOnly ? " for reading: " : " for reading and writing: ") +
                      std::strerror(e) + (e == EACCES || e == EROFS ? " (try --read-only)" : ""));
    }
    dbus::Client::LoopSetupReply r;
    try {
      r = client_().loopSetup(fd, opt, !o_.noAskPassword);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    const auto& d = r.device;
    if (json()) {
      printJson(loopJson(d));
    } else {
      std::string line =
          "Set up " + d.device + " backed by " + d.backingFile + ": direct I/O " +
          (d.directIo ? "on" : "off") + ", block size " + std::to_string(d.blockSize) +
          (d.blockSizeSource.empty() ? "" : " (" + d.blockSizeSource + ")") +
          (d.readOnly ? ", read-only" : "") + ", " + backendKindName(d.backend) + " backend, " +
          std::to_string(d.workers) + (d.workers == 1 ? " worker" : " workers") + ", queue depth " +
          std::to_string(d.queueDepth) + ".";
      say(line);
      if (!d.directIo && !d.directIoNote.empty() && !o_.quiet) {
        io_.err("Note: direct I/O is off: " + d.directIoNote + "\n");
      }
    }
    int rc = kExitOk;
    if (inv_.args.size() > 2) rc = runHolding(d.device);
    if (r.deviceFd >= 0) ::close(r.deviceFd);
    return rc;
  }

  // Runs CMD ARGS... ({} → the device) while our handle keeps an autoclear device alive.
  int runHolding(const std::string& device) {
    std::vector<std::string> argv(inv_.args.begin() + 2, inv_.args.end());
    for (auto& a : argv) {
      for (size_t p; (p = a.find("{}")) != std::string::npos;) a.replace(p, 2, device);
    }
    pid_t pid = fork();
    if (pid < 0) return fail(kExitFailure, std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }

  int list() {
    auto l = client_().loopList(f_.all);
    if (json()) {
      printJson(loopsJson(l));
    } else {
      io_.page(loopsText(l, !o_.noLegend, io_.color));
    }
    return kExitOk;
  }

  int show() {
    auto d = client_().loopShow(name());
    if (json()) {
      printJson(loopJson(d));
    } else {
      io_.page(loopText(d));
    }
    return kExitOk;
  }

  int set() {
    const std::string n = name();
    auto& c = client_();
    std::vector<std::string> done;
    if (f_.blockSize) {
      const uint32_t size = *f_.blockSize;
      c.loopSetBlockSize(n, size, req());
      done.push_back("block size " + std::to_string(size));
    }
    if (f_.directIo) {
      c.loopSetDirectIO(n, *f_.directIo == "on", req());
      done.push_back("direct I/O " + *f_.directIo);
    }
    if (f_.capacity) {
      c.loopSetCapacity(n, req());
      done.push_back("capacity refreshed");
    }
    if (f_.workers) {
      c.loopSetWorkers(n, *f_.workers, req());
      done.push_back("workers " + std::to_string(*f_.workers));
    }
    if (f_.queueDepth) {
      c.loopSetQueueDepth(n, *f_.queueDepth, req());
      done.push_back("queue depth " + std::to_string(*f_.queueDepth));
    }
    auto d = c.loopShow(n);
    if (json()) {
      printJson(loopJson(d));
    } else {
      std::string line;
      for (const auto& s : done) line += (line.empty() ? "" : ", ") + s;
      say(d.device + ": " + line + ". Now: direct I/O " + (d.directIo ? "on" : "off") +
          ", block size " + std::to_string(d.blockSize) + ", " + formatBytes(d.sizeBytes) + ", " +
          std::to_string(d.workers) + (d.workers == 1 ? " worker" : " workers") + ", queue depth " +
          std::to_string(d.queueDepth) + ".");
    }
    return kExitOk;
  }

  int detach() {
    const std::string n = name();
    bool lazy = client_().loopDetach(n, req());
    if (json()) {
      printJson(Json(Table::record({{"device", Cell::text("/dev/" + n)},
                                    {"detached", Cell::boolean(!lazy)},
                                    {"lazy", Cell::boolean(lazy)}})
                         .rowJson(0)));
    } else if (lazy) {
      say("/dev/" + n +
          " is still in use: autoclear is set and it detaches when its last user closes it.");
    } else {
      say("Detached /dev/" + n + ".");
    }
    return kExitOk;
  }

  const Invocation& inv_;
  const CliOptions& o_;
  const LoopFlags& f_;
  const Io& io_;
  const std::function<dbus::Client&()>& client_;
};

}  // namespace

int runLoop(const Invocation& inv, const Io& io, const std::function<dbus::Client&()>& client) {
  return LoopRunner(inv, io, client).run();
}

}  // namespace cxiosync::ctl
