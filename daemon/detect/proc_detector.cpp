#include "daemon/detect/proc_detector.h"

namespace cxiosync {

namespace {
constexpr uint64_t kMsSync = 4;  // MS_SYNC: msync(MS_ASYNC) never waits
}

ProcDetector::ProcDetector(const ProcFs& proc, ProcDetectorOptions options)
    : proc_(proc),
      options_(options),
      table_(options.syscalls ? *options.syscalls : hostSyscallTable()) {}

std::vector<Syncer> ProcDetector::syncers() const {
  std::vector<Syncer> out;
  out.reserve(current_.size());
  for (const auto& [tid, f] : current_) out.push_back(f.syncer);
  return out;
}

Status ProcDetector::scan(bool anythingCanMatter) {
  stats_ = ProcScanStats{};
  if (!anythingCanMatter) {
    stats_.skipped = true;
    if (!current_.empty()) {
      current_.clear();
      markChanged();
    }
    return Ok{};
  }
  auto pids = proc_.listPids();
  if (!pids) return pids.error();
  const TimePoint now = Clock::now();
  std::map<int64_t, Found> next;
  for (int64_t pid : *pids) {
    auto tids = proc_.listTids(pid);
    if (!tids) continue;  // exited, or a kernel we may not look at
    ++stats_.processes;
    for (int64_t tid : *tids) {
      ++stats_.threads;
      auto stat = proc_.readTaskStat(pid, tid);
      if (!stat) continue;
      if (options_.onlyDState && stat->state != 'D') continue;
      if (stat->state == 'Z' || stat->state == 'X') continue;
      ++stats_.syscallReads;
      auto sc = proc_.readTaskSyscall(pid, tid);
      if (!sc || sc->kind != ProcSyscall::Kind::InSyscall) continue;
      auto which = table_.lookup(sc->nr);
      if (!which || !isWatched(*which, options_.watchFsync)) continue;
      if (*which == SyncSyscall::Msync && (sc->args[2] & kMsSync) == 0) continue;
      auto cg = proc_.readTaskCgroup(pid, tid);
      if (!cg || !*cg) continue;

      Found f;
      f.startTimeTicks = stat->startTimeTicks;
      Syncer& s = f.syncer;
      s.tid = tid;
      s.pid = pid;
      s.comm = stat->comm;
      s.cgroup = **cg;
      s.syscall = *which;
      s.since = now;
      auto prev = current_.find(tid);
      if (prev != current_.end() && prev->second.startTimeTicks == f.startTimeTicks &&
          prev->second.syncer.syscall == s.syscall) {
        s.since = prev->second.syncer.since;
        s.targetDevice = prev->second.syncer.targetDevice;
      } else if (takesFd(*which)) {
        auto dev = proc_.fdDevice(pid, static_cast<int64_t>(sc->args[0]));
        if (dev) s.targetDevice = *dev;
      }
      next.emplace(tid, std::move(f));
    }
  }
  stats_.syncers = next.size();
  bool changedSet = next.size() != current_.size();
  if (!changedSet) {
    for (auto a = next.begin(), b = current_.begin(); a != next.end(); ++a, ++b) {
      if (a->first != b->first || a->second.startTimeTicks != b->second.startTimeTicks ||
          a->second.syncer.syscall != b->second.syncer.syscall ||
          a->second.syncer.cgroup != b->second.syncer.cgroup) {
        changedSet = true;
        break;
      }
    }
  }
  current_ = std::move(next);
  if (changedSet) markChanged();
  return Ok{};
}

}  // namespace cxiosync
