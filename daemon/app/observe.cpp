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

Result<ObserveOptions> parseObserveArgs(const std::vector<std::string>& args) {
  ObserveOptions o;
  o.settings.pollInterval = std::chrono::milliseconds(100);
  auto number = [](const std::string& v, const std::string& key) -> Result<uint64_t> {
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 18) {
      return Error{0, "bad number for " + key + ": " + v};
    }
    return std::stoull(v);
  };
  for (const auto& a : args) {
    if (a == "--observe") continue;
    const auto eq = a.find('=');
    const std::string key = a.substr(0, eq);
    const std::optional<std::string> v =
        eq == std::string::npos ? std::nullopt : std::optional<std::string>(a.substr(eq + 1));
    if (!v) {
      if (key == "--once") {
        o.once = true;
      } else if (key == "--json") {
        o.json = true;
      } else if (key == "--changes") {
        o.onlyChanges = true;
      } else if (key == "--watch-fsync") {
        o.settings.watchFsync = true;
      } else {
        return Error{0, "unknown argument: " + a};
      }
      continue;
    }
    if (key == "--detector") {
      if (*v == "auto") {
        o.settings.detector = DetectorKind::Auto;
      } else if (*v == "tracefs") {
        o.settings.detector = DetectorKind::Tracefs;
      } else if (*v == "procfs") {
        o.settings.detector = DetectorKind::Procfs;
      } else {
        return Error{0, "bad --detector: " + *v + " (auto, tracefs, procfs)"};
      }
    } else if (key == "--poll-interval-ms" || key == "--duration-ms" ||
               key == "--min-dirty-bytes") {
      auto n = number(*v, key);
      if (!n) return n.error();
      if (key == "--poll-interval-ms") {
        if (*n < 1) return Error{0, "--poll-interval-ms must be >= 1"};
        o.settings.pollInterval = std::chrono::milliseconds(*n);
      } else if (key == "--duration-ms") {
        o.duration = std::chrono::milliseconds(*n);
      } else {
        o.settings.minDirtyBytes = *n;
      }
    } else if (key == "--cgroup-root") {
      o.roots.cgroup = *v;
    } else if (key == "--proc-root") {
      o.roots.proc = *v;
    } else if (key == "--sys-root") {
      o.roots.sys = *v;
    } else if (key == "--tracefs-root") {
      o.roots.tracefs = *v;
    } else {
      return Error{0, "unknown argument: " + a};
    }
  }
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
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
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
  }
  auto opts = parseObserveArgs(args);
  if (!opts) {
    std::fprintf(stderr, "%s: %s (try --help)\n", argv[0], opts.error().message.c_str());
    return 2;
  }
  return runObserve(*opts);
}

}  // namespace cxiosync
