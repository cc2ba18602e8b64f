#pragma once
// Builds the planner's Snapshot (policy/planner/snapshot.h) from the adapters.
//
// Cost model (10,000 cgroups): a slow full walk (every `treeRescanInterval`, or after
// invalidate()) opens every cgroup directory and reads its io.max; the device stack is
// rebuilt then too. Every build() (each tick) re-reads io.max and memory.stat only of the
// cgroups that matter: those with a finite write limit (wbps/wiops) and their descendants
// (effective limit finite), plus their ancestors and the syncers' cgroups + ancestors
// (io.max only). Idle cost with no limits anywhere: nothing per tick.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/detect/detector.h"
#include "daemon/kernel/cgroup_fs.h"
#include "daemon/kernel/proc_fs.h"
#include "daemon/kernel/sys_block.h"
#include "daemon/kernel/trace_fs.h"
#include "policy/config/knobs.h"
#include "policy/planner/snapshot.h"

namespace cxiosync {

struct SnapshotBuilderOptions {
  std::chrono::milliseconds treeRescanInterval{30000};
  uint64_t minDirtyBytes = 1 << 20;
};

// True when the entry limits writes (wbps or wiops finite).
bool limitsWrites(const IoMaxEntry& e);

class SnapshotBuilder {
 public:
  SnapshotBuilder(const CgroupFs& cgroups, const SysBlock* sys, SnapshotBuilderOptions options);

  // Full walk now (io.max of every cgroup; device stack).
  Status rescan(TimePoint now);
  // Forces a full walk at the next build() (cgroup created/removed, limits changed).
  void invalidate() { nextRescan_ = TimePoint{}; }

  // Snapshot for the planner = refresh(now) + assemble(syncers, now).
  Result<Snapshot> build(std::vector<Syncer> syncers, TimePoint now);
  // Re-reads io.max of the limited cgroups and memory.stat of their subtrees (skipping a
  // subtree whose top holds less than minDirtyBytes: memory.stat is hierarchical). Runs
  // rescan() when due. Gone cgroups are dropped silently (and trigger a rescan).
  Status refresh(TimePoint now);
  // Snapshot from the last refresh() plus the syncers (their cgroups and ancestors are
  // added with their io.max; fd-syscall target devices are mapped to whole disks).
  Snapshot assemble(std::vector<Syncer> syncers, TimePoint now) const;

  // From the last build(): a cgroup with a finite effective write limit holds
  // file_dirty + file_writeback >= minDirtyBytes (the procfs detector's gate).
  bool anyLimitedDirty() const { return anyLimitedDirty_; }
  // cgroup directory inode -> path, for every cgroup seen by the last walk.
  std::optional<CgroupPath> pathOfInode(uint64_t ino) const;
  size_t cgroupsWalked() const { return walked_; }
  const DeviceStack& devices() const { return devices_; }

 private:
  void walk(const CgroupDir& dir, int depth);
  const CgroupFs& cgroups_;
  const SysBlock* sys_;
  SnapshotBuilderOptions options_;
  TimePoint nextRescan_{};
  // From the last walk: cgroups with any io.max line (and their inode), all inodes.
  std::map<CgroupPath, std::vector<IoMaxEntry>> limited_;  // any io.max line
  std::map<CgroupPath, CgroupState> states_;               // from the last refresh()
  std::map<CgroupPath, uint64_t> pathInodes_;
  std::map<uint64_t, CgroupPath> inodes_;
  std::map<CgroupPath, std::vector<std::string>> children_;
  DeviceStack devices_;
  bool anyLimitedDirty_ = false;
  size_t walked_ = 0;
};

// The injectable roots (--cgroup-root, --proc-root, --sys-root, --tracefs-root).
struct SenseRoots {
  std::string cgroup = kDefaultCgroupRoot;
  std::string proc = kDefaultProcRoot;
  std::string sys = kDefaultSysRoot;
  std::string tracefs = kDefaultTracefsRoot;
};

// Everything the sensing half owns, wired together: adapters, detector, builder.
// Event loop: add fd() (if >= 0) to epoll and call onReadable() when readable; on each
// tick call tick(now) and hand the snapshot to the planner. cgroupFs() is also the write
// path (CgroupFs::writeIoMax) for the executor.
class Sensors {
 public:
  static Result<std::unique_ptr<Sensors>> open(const SenseRoots& roots,
                                               const GlobalSettings& settings);
  ~Sensors();

  const CgroupFs& cgroupFs() const { return *cgroups_; }
  const ProcFs& procFs() const { return *proc_; }
  const SysBlock* sysBlock() const { return sys_.get(); }
  SyncDetector& detector() { return *detector_; }
  DetectorKind detectorKind() const { return kind_; }
  const std::string& detectorReason() const { return reason_; }
  SnapshotBuilder& builder() { return *builder_; }

  int fd() const { return detector_->fd(); }
  void onReadable() { detector_->onReadable(); }
  // Detector tick (gated by the last snapshot's anyLimitedDirty()) + build().
  Result<Snapshot> tick(TimePoint now);

 private:
  Sensors() = default;
  std::unique_ptr<CgroupFs> cgroups_;
  std::unique_ptr<ProcFs> proc_;
  std::unique_ptr<SysBlock> sys_;
  std::unique_ptr<TraceFs> tracefs_;
  std::unique_ptr<SyncDetector> detector_;
  std::unique_ptr<SnapshotBuilder> builder_;
  DetectorKind kind_ = DetectorKind::Procfs;
  std::string reason_;
};

}  // namespace cxiosync
