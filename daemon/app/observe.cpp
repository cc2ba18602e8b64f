// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/app/observe.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cinttypes>
#include <csignal>
#include <cstring>
#include <iostream>
#include <set>

#include "daemon/sense/syscalls.h"
#include "policy/cli/command_line.h"
#include "policy/config/values.h"
#include "policy/json.h"

namespace cxiosync {

namespace {

volatile sig_atomic_t gStop = 0;
void onSignal(int) {
  gStop = 1;
}

std::string limitText(const std::optional<uint64_t>& v) {
  if (!v) return "-";
  if (*v == kUnlimited) return "max";
  return std::to_string(*v);
}

std::string ioMaxText(const IoMaxEntry& e) {
  return e.dev.str() + " rbps=" + limitText(e.limits.rbps) + " wbps=" + limitText(e.limits.wbps) +
         " riops=" + limitText(e.limits.riops) + " wiops=" + limitText(e.limits.wiops);
}

std::string bytesText(uint64_t b) {
  char buf[32];
  if (b >= (1u << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  } else if (b >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", b);
  }
  return buf;
}

std::optional<CgroupPath> resolveIno(const Snapshot& s, uint64_t ino, const InodeResolver& r) {
  for (const auto& [p, c] : s.cgroups) {
    if (c.inode == ino) return p;
  }
  if (r) return r(ino);
  return std::nullopt;
}

int64_t msSince(TimePoint now, TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - t).count();
}

Json jsonLimit(const std::optional<uint64_t>& v) {
  if (!v) return nullptr;
  if (*v == kUnlimited) return "max";
  return *v;
}

Json syncerToJson(const Snapshot& s, const Syncer& sy, const InodeResolver& inodeName) {
  Json waits = Json::array();
  for (const auto& [ino, bdi] : sy.waitsOn) {
    auto p = resolveIno(s, ino, inodeName);
    waits.push_back({{"cgroup_ino", ino},
                     {"cgroup", p ? jsonBytes(p->display()) : Json(nullptr)},
                     {"bdi", bdi.str()}});
  }
  return {{"tid", sy.tid},
          {"pid", sy.pid},
          {"comm", jsonBytes(sy.comm)},
          {"cgroup", jsonBytes(sy.cgroup.display())},
          {"syscall", syncSyscallName(sy.syscall)},
          {"age_ms", msSince(s.now, sy.since)},
          {"target_device", sy.targetDevice ? Json(sy.targetDevice->str()) : Json(nullptr)},
          {"waits_on", std::move(waits)}};
}

}  // namespace

std::string snapshotToJson(const Snapshot& s, const std::string& detector,
                           const InodeResolver& inodeName) {
  Json syncers = Json::array();
  for (const auto& sy : s.syncers) syncers.push_back(syncerToJson(s, sy, inodeName));
  Json cgroups = Json::array();
  for (const auto& [p, c] : s.cgroups) {
    Json ioMax = Json::array();
    for (const auto& e : c.ioMax)
      ioMax.push_back({{"dev", e.dev.str()},
                       {"rbps", jsonLimit(e.limits.rbps)},
                       {"wbps", jsonLimit(e.limits.wbps)},
                       {"riops", jsonLimit(e.limits.riops)},
                       {"wiops", jsonLimit(e.limits.wiops)}});
    cgroups.push_back({{"path", jsonBytes(p.display())},
                       {"inode", c.inode},
                       {"file_dirty", c.fileDirty},
                       {"file_writeback", c.fileWriteback},
                       {"io_max", std::move(ioMax)}});
  }
  Json devices = Json::object();
  for (const auto& [d, lower] : s.devices.lower) {
    Json& l = devices[d.str()];
    l = Json::array();
    for (const auto& dn : lower) l.push_back(dn.str());
  }
  const int64_t wallMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  return jsonDump({{"detector", detector},
                   {"wall_ms", wallMs},
                   {"syncers", std::move(syncers)},
                   {"cgroups", std::move(cgroups)},
                   {"devices", std::move(devices)}});
}

std::string snapshotToText(const Snapshot& s, const std::string& detector,
                           const InodeResolver& inodeName) {
  std::string o = "detector: " + detector + "\n";
  o += "limited cgroups:\n";
  bool any = false;
  for (const auto& [p, c] : s.cgroups) {
    if (c.ioMax.empty() && c.fileDirty == 0 && c.fileWriteback == 0) continue;
    any = true;
    o += "  " + p.display() + " (inode " + std::to_string(c.inode) + ")  dirty " +
         bytesText(c.fileDirty) + ", writeback " + bytesText(c.fileWriteback) + "\n";
    for (const auto& e : c.ioMax) o += "      io.max " + ioMaxText(e) + "\n";
  }
  if (!any) o += "  (none)\n";
  o += "syncers:\n";
  if (s.syncers.empty()) o += "  (none)\n";
  for (const auto& sy : s.syncers) {
    o += "  tid " + std::to_string(sy.tid) + " pid " + std::to_string(sy.pid) + " (" + sy.comm +
         ") in " + sy.cgroup.display() + ": " + syncSyscallName(sy.syscall) + " for " +
         std::to_string(msSince(s.now, sy.since)) + " ms";
    if (sy.targetDevice) o += ", file on " + sy.targetDevice->str();
    o += "\n";
    for (const auto& [ino, bdi] : sy.waitsOn) {
      auto p = resolveIno(s, ino, inodeName);
      o += "      waits on writeback of " + (p ? p->display() : std::string("?")) + " (inode " +
           std::to_string(ino) + ") on " + bdi.str() + "\n";
    }
  }
  if (!s.devices.lower.empty()) {
    o += "device stack:\n";
    for (const auto& [d, lower] : s.devices.lower) {
      o += "  " + d.str() + " ->";
      for (const auto& l : lower) o += " " + l.str();
      o += "\n";
    }
  }
  return o;
}

namespace {

enum ObserveOptionId : int {
  kOnce = 256,
  kJson,
  kChanges,
  kWatchFsync,
  kObserveFlag,
  kDetectorOpt,
  kPollIntervalMs,
  kDurationMs,
  kMinDirtyBytes,
  kCgroupRootOpt,
  kProcRootOpt,
  kSysRootOpt,
  kTracefsRootOpt,
};

std::vector<option> observeOptions() {
  return {
      {"once", no_argument, nullptr, kOnce},
      {"json", no_argument, nullptr, kJson},
      {"changes", no_argument, nullptr, kChanges},
      {"watch-fsync", no_argument, nullptr, kWatchFsync},
      {"observe", no_argument, nullptr, kObserveFlag},  // cxiosyncd --observe ... passes it on
      {"detector", required_argument, nullptr, kDetectorOpt},
      {"poll-interval-ms", required_argument, nullptr, kPollIntervalMs},
      {"duration-ms", required_argument, nullptr, kDurationMs},
      {"min-dirty-bytes", required_argument, nullptr, kMinDirtyBytes},
      {"cgroup-root", required_argument, nullptr, kCgroupRootOpt},
      {"proc-root", required_argument, nullptr, kProcRootOpt},
      {"sys-root", required_argument, nullptr, kSysRootOpt},
      {"tracefs-root", required_argument, nullptr, kTracefsRootOpt},
      {"help", no_argument, nullptr, 'h'},
  };
}

Status applyObserveArg(ObserveOptions& o, const CliArg& a) {
  constexpr uint64_t kMaxMs = uint64_t{1} << 40;
  switch (a.id) {
    case kOnce:
      o.once = true;
      break;
    case kJson:
      o.json = true;
      break;
    case kChanges:
      o.onlyChanges = true;
      break;
    case kWatchFsync:
      o.settings.watchFsync = true;
      break;
    case kObserveFlag:
      break;
    case 'h':
      o.help = true;
      break;
    case kDetectorOpt: {
      auto d = parseDetector(*a.value);
      if (!d) return cliValueError(a, d.error().message);
      o.settings.detector = *d;
      break;
    }
    case kPollIntervalMs: {
      auto n = parseCliNumber(a, 1, kMaxMs);
      if (!n) return n.error();
      o.settings.pollInterval = std::chrono::milliseconds(*n);
      break;
    }
    case kDurationMs: {
      auto n = parseCliNumber(a, 0, kMaxMs);
      if (!n) return n.error();
      o.duration = std::chrono::milliseconds(*n);
      break;
    }
    case kMinDirtyBytes: {
      auto n = parseMinDirtyBytes(*a.value);
      if (!n) return cliValueError(a, n.error().message);
      o.settings.minDirtyBytes = *n;
      break;
    }
    case kCgroupRootOpt:
      o.roots.cgroup = *a.value;
      break;
    case kProcRootOpt:
      o.roots.proc = *a.value;
      break;
    case kSysRootOpt:
      o.roots.sys = *a.value;
      break;
    case kTracefsRootOpt:
      o.roots.tracefs = *a.value;
      break;
    default:
      return makeError("unexpected argument '" + a.name + "'", EINVAL);
  }
  return Ok{};
}

}  // namespace

Result<ObserveOptions> parseObserveArgs(const std::vector<std::string>& args) {
  ObserveOptions o;
  o.settings.pollInterval = std::chrono::milliseconds(100);
  CommandLine cl(args, "h", observeOptions());
  while (true) {
    auto a = cl.next();
    if (!a) return a.error();
    if (!*a) break;
    if (auto st = applyObserveArg(o, **a); !st) return st.error();
  }
  if (!cl.rest().empty()) return makeError("unexpected argument '" + cl.rest()[0] + "'", EINVAL);
  return o;
}

int runObserve(const ObserveOptions& options) {
  auto sensors = Sensors::open(options.roots, options.settings);
  if (!sensors) {
    std::fprintf(stderr, "cxiosync observe: %s\n", sensors.error().message.c_str());
    return 1;
  }
  Sensors& s = **sensors;
  const std::string detector = detectorKindName(s.detectorKind());
  std::fprintf(stderr, "cxiosync observe: detector %s (%s)\n", detector.c_str(),
               s.detectorReason().c_str());

  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  gStop = 0;

  const auto start = Clock::now();
  auto nextTick = start;
  if (options.once) nextTick = start + options.settings.pollInterval;
  InodeResolver resolver = [&](uint64_t ino) { return s.builder().pathOfInode(ino); };
  std::string lastSyncers = "\x01";
  while (!gStop) {
    auto now = Clock::now();
    if (now >= nextTick) {
      auto snap = s.tick(now);
      if (!snap) {
        std::fprintf(stderr, "cxiosync observe: %s\n", snap.error().message.c_str());
        return 1;
      }
      bool print = true;
      if (options.onlyChanges && !options.once) {
        // Print when the set of syncers (or what they wait on) changed.
        std::string key;
        for (const auto& sy : snap->syncers) {
          key += std::to_string(sy.tid) + syncSyscallName(sy.syscall) + sy.cgroup.relative();
          for (const auto& [ino, bdi] : sy.waitsOn) key += "/" + std::to_string(ino);
          key += ';';
        }
        print = key != lastSyncers;
        lastSyncers = key;
      }
      if (print) {
        std::string out = options.json ? snapshotToJson(*snap, detector, resolver) + "\n"
                                       : snapshotToText(*snap, detector, resolver) + "\n";
        std::fwrite(out.data(), 1, out.size(), stdout);
        std::fflush(stdout);
      }
      if (options.once) return 0;
      nextTick = now + options.settings.pollInterval;
      continue;
    }
    if (options.duration.count() > 0 && now - start >= options.duration) break;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(nextTick - now).count();
    struct pollfd pfd {
      s.fd(), POLLIN, 0
    };
    int n = ::poll(&pfd, pfd.fd >= 0 ? 1 : 0, static_cast<int>(wait < 1 ? 1 : wait));
    if (n > 0 && (pfd.revents & (POLLIN | POLLERR | POLLHUP))) {
      s.onReadable();
      // Event-driven: show a changed set right away instead of at the next tick.
      if (s.detector().changed()) nextTick = Clock::now();
    }
  }
  return 0;
}

int observeMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto opts = parseObserveArgs(args);
  if (!opts) {
    std::fprintf(stderr, "%s: %s (try --help)\n", argv[0], opts.error().message.c_str());
    return 2;
  }
  if (opts->help) {
    std::printf(
        "usage: %s [--once] [--json] [--changes] [--detector=auto|tracefs|procfs]\n"
        "          [--poll-interval-ms=N] [--duration-ms=N] [--watch-fsync]\n"
        "          [--min-dirty-bytes=N] [--cgroup-root=DIR] [--proc-root=DIR]\n"
        "          [--sys-root=DIR] [--tracefs-root=DIR]\n"
        "Prints cgroups with io.max limits, their dirty/writeback bytes, and the threads\n"
        "inside sync-family syscalls with what they wait on. Changes nothing.\n",
        argv[0]);
    return 0;
  }
  return runObserve(*opts);
}

}  // namespace cxiosync
