// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sense/proc_detector.h"

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
  // A known syncer is never dropped unlooked: the gate turns false as soon as its boost
  // lifts the only dirty limit, and dropping it then would end that boost at once.
  if (!anythingCanMatter && current_.empty()) {
    stats_.skipped = true;
    return Ok{};
  }
  const TimePoint now = Clock::now();
  std::map<int64_t, Found> next;
  auto visit = [&](const ProcFs::ThreadView& t) {
    ++stats_.threads;
    if (options_.onlyDState ? t.state != 'D' : (t.state == 'Z' || t.state == 'X')) return;
    auto stat = parseProcStat(t.stat);
    if (!stat) return;
    const int64_t pid = t.pid, tid = t.tid;
    ++stats_.syscallReads;
    auto sc = proc_.readTaskSyscall(pid, tid);
    if (!sc || sc->kind != ProcSyscall::Kind::InSyscall) return;
    auto which = table_.lookup(sc->nr);
    if (!which || !isWatched(*which, options_.watchFsync)) return;
    if (*which == SyncSyscall::Msync && (sc->args[2] & kMsSync) == 0) return;
    auto cg = proc_.readTaskCgroup(pid, tid);
    if (!cg || !*cg) return;

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
  };
  auto processes = proc_.forEachThread(visit);
  if (!processes) return processes.error();
  stats_.processes = *processes;
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
