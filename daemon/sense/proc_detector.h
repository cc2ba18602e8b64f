// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// procfs sync detector (fallback). scan(): every thread in state D whose
// /proc/PID/task/TID/syscall number is a watched sync-family syscall is a syncer; its
// cgroup comes from /proc/PID/task/TID/cgroup, and for fd-taking syscalls the target
// device from stat of /proc/PID/fd/ARG0. tick() skips the per-thread work (and reports no
// syncers) only when nothing can matter: no limited cgroup is dirty, nothing is boosted and
// the last scan found no syncer.
#include <cstdint>
#include <map>
#include <vector>

#include "daemon/kernel/proc_fs.h"
#include "daemon/sense/detector.h"
#include "daemon/sense/syscalls.h"

namespace cxiosync {

struct ProcDetectorOptions {
  bool watchFsync = false;
  const SyscallTable* syscalls = nullptr;  // default: hostSyscallTable()
  bool onlyDState = true;  // false: any thread inside a watched syscall (TraceDetector rescans)
};

struct ProcScanStats {
  uint64_t processes = 0;
  uint64_t threads = 0;
  uint64_t syscallReads = 0;
  uint64_t syncers = 0;
  bool skipped = false;  // anythingCanMatter was false
};

class ProcDetector : public SyncDetector {
 public:
  ProcDetector(const ProcFs& proc, ProcDetectorOptions options);

  DetectorKind kind() const override { return DetectorKind::Procfs; }
  Status tick(const DetectorTick& t) override { return scan(t.limitedDirty || t.boosted); }
  std::vector<Syncer> syncers() const override;

  // One pass over /proc. A syncer seen in the previous pass (same tid, start time and
  // syscall) keeps its `since`. anythingCanMatter = false skips the pass only while no
  // syncer is known: a known one is followed until it leaves its call.
  Status scan(bool anythingCanMatter = true);
  const ProcScanStats& lastScan() const { return stats_; }

 private:
  struct Found {
    Syncer syncer;
    uint64_t startTimeTicks = 0;
  };
  const ProcFs& proc_;
  ProcDetectorOptions options_;
  const SyscallTable& table_;
  std::map<int64_t, Found> current_;
  ProcScanStats stats_;
};

}  // namespace cxiosync
