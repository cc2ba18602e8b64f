// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Builds the planner's Snapshot (policy/model/snapshot.h) from the adapters.
//
// Cost model (10,000 cgroups): a slow full walk (every `treeRescanInterval`: 30 s, 5 min with
// tracefs; or after invalidate()) opens every cgroup directory and reads its io.max; the
// device stack is rebuilt then and every `stackRebuildInterval` (30 s). Every build() (each tick)
// re-reads io.max and memory.stat only of the cgroups that matter: those with a finite write limit
// (wbps/wiops) and their descendants (effective limit finite), plus their ancestors and the
// syncers' cgroups + ancestors (io.max only). Idle cost with no limits anywhere: one read of the
// root's cgroup.stat per tick.
//
// Cgroups created between walks (a transient unit with its own IOWriteBandwidthMax=, a
// mkdir + io.max write) are learnt at the next tick (with tracefs idle every 5 s, but a sync's
// event tick refreshes at once), not at the next scheduled walk:
//   - tree changed: the root's cgroup.stat nr_descendants differs from its value at the
//     last walk (mkdir or rmdir anywhere below; one small read per tick, both detectors);
//   - a syncer's cgroup, or a cgroup inode a syncer waits on (tracefs writeback_queue
//     cgroup_ino=N), is unknown (catches what the count misses: a create + a remove
//     between two ticks). An inode or path a walk already failed to find (a removed
//     cgroup whose writeback is still in flight, a cgroup outside --cgroup-root) does not
//     trigger again until the next scheduled walk;
//   - a removed cgroup was seen (gone error).
// Such triggered walks run at most once per rescanGap() = max(minRescanGap, 20 x the last
// walk's duration): a storm of unknown inodes or constant cgroup churn cannot make the
// daemon walk continuously, and walks cost at most ~5% of a core even then (10,000 cgroups:
// a walk takes ~0.1 s, so ~2 s between triggered walks; 1,000: 1 s). A cgroup is usually
// created first and limited a moment later (systemd: mkdir, then io.max, then attach), so
// a walk may find it still unlimited: cgroups that are new at a walk are "young" for
// `newCgroupWatch` and their io.max is re-read every refresh until then (cost: one read
// per young cgroup per tick, bounded by the creation rate). Without this, a procfs
// detector would never look (its scan is gated on anyLimitedDirty(), which only knows
// limits the builder has seen), and tracefs would name an inode with no known limit.
// A limit added later to an old, unlimited cgroup (systemctl set-property) is learnt the
// first tick a tracefs syncer waits on that cgroup or a descendant (writeback_queue names
// it: it and its ancestors are then watched like young cgroups); otherwise, and always
// with the procfs detector (its scan is gated on known limits), at the next scheduled walk.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/kernel/cgroup_fs.h"
#include "daemon/kernel/proc_fs.h"
#include "daemon/kernel/sys_block.h"
#include "daemon/kernel/trace_fs.h"
#include "daemon/sense/detector.h"
#include "policy/config/knobs.h"
#include "policy/model/snapshot.h"

namespace cxiosync {

struct SnapshotBuilderOptions {
  std::chrono::milliseconds treeRescanInterval{30000};
  // The block device stack (loop -> backing file's disk, dm/md -> slaves) is rebuilt this
  // often even when the walk is rarer (Sensors: tracefs walks every kTracefsTreeRescan).
  std::chrono::milliseconds stackRebuildInterval{30000};
  // Triggered walks (tree changed, unknown syncer cgroup or inode, gone cgroup): at most
  // one per rescanGap() = max(this, walkCostFactor x the last walk's wall time).
  std::chrono::milliseconds minRescanGap{1000};
  unsigned walkCostFactor = 20;
  // A cgroup first seen by a walk (not the first one) has its io.max re-read every refresh
  // for this long.
  std::chrono::milliseconds newCgroupWatch{30000};
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

  // Snapshot for the planner = refresh(now) + noteSyncers() (+ refresh(now) again when it
  // asks for a walk) + assemble(syncers, now).
  Result<Snapshot> build(std::vector<Syncer> syncers, TimePoint now);
  // Re-reads io.max of the limited and young cgroups and memory.stat of the limited
  // subtrees (skipping a subtree whose top holds less than minDirtyBytes: memory.stat is
  // hierarchical). Runs rescan() when due: scheduled, invalidated, or triggered (tree
  // changed, noteSyncers(), gone cgroups) and minRescanGap since the last walk. Gone
  // cgroups are dropped silently (and trigger a rescan). `walkIfDue` false (a sync's event
  // tick): only a walk noteSyncers() or a gone cgroup asked for; a scheduled walk or a tree
  // change waits for the next timer tick (a 1,000-cgroup walk took ~340 ms in the VM).
  Status refresh(TimePoint now, bool walkIfDue = true);
  // Holders whose io.max is lifted now: their subtrees' memory.stat is read as under a limit
  // (a lifted io.max reads "max", or nothing at all once every key is max).
  void setBoosted(std::set<CgroupPath> boosted) { boosted_ = std::move(boosted); }
  // Requests a walk when a syncer's cgroup or a cgroup inode in its waitsOn is unknown to
  // the last walk; watches known but unlimited waitsOn cgroups (and ancestors) as young.
  // True when refresh(now) would read something new now (the caller refreshes again before
  // assemble(), so this tick's snapshot already knows the new cgroup or limit).
  bool noteSyncers(const std::vector<Syncer>& syncers, TimePoint now);
  // Snapshot from the last refresh() plus the syncers (their cgroups and ancestors are
  // added with their io.max; fd-syscall target devices are mapped to whole disks; every
  // cgroup carries the directory owner the walk or a young re-read saw).
  Snapshot assemble(std::vector<Syncer> syncers, TimePoint now) const;

  // From the last build(): a cgroup with a finite effective write limit holds
  // file_dirty + file_writeback >= minDirtyBytes (the procfs detector's gate).
  bool anyLimitedDirty() const { return anyLimitedDirty_; }
  // cgroup directory inode -> path, for every cgroup seen by the last walk.
  std::optional<CgroupPath> pathOfInode(uint64_t ino) const;
  size_t cgroupsWalked() const { return walked_; }
  // Full walks so far, and how many of them were triggered (not scheduled/invalidated).
  uint64_t walks() const { return walks_; }
  uint64_t triggeredWalks() const { return triggeredWalks_; }
  // Cgroups currently watched as young (their io.max re-read every refresh).
  size_t youngCgroups() const { return young_.size(); }
  // The current minimum time between a walk and a triggered one.
  std::chrono::nanoseconds rescanGap() const;
  const DeviceStack& devices() const { return devices_; }
  // One read of the root's cgroup.stat: true when nr_descendants differs from the walk's.
  bool treeChanged() const;

 private:
  void walk(const CgroupDir& dir, int depth);
  // refresh()'s steps, in order. `sawGone`: a cgroup vanished under us (ask for a walk).
  void readYoungLimits(TimePoint now);    // a limit written after the walk found them
  void readLimits(bool& sawGone);         // fresh io.max of every cgroup that has a line
  void readDirtySubtrees(bool& sawGone);  // memory.stat below write limits, breadth-first
  void addAncestorsOfLimited();           // their io.max is part of the effective limit
  const CgroupFs& cgroups_;
  const SysBlock* sys_;
  SnapshotBuilderOptions options_;
  TimePoint nextRescan_{};
  TimePoint nextStackRebuild_{};
  // From the last walk: cgroups with any io.max line (and their inode), all inodes.
  std::map<CgroupPath, std::vector<IoMaxEntry>> limited_;  // any io.max line
  std::map<CgroupPath, CgroupState> states_;               // from the last refresh()
  std::set<CgroupPath> boosted_;                           // setBoosted()
  std::map<CgroupPath, uint64_t> pathInodes_;
  std::map<uint64_t, CgroupPath> inodes_;
  // Directory owner of every cgroup below the root the walk saw (young ones re-read each
  // refresh), for CgroupState::ownerUid: who a delegated tenant belongs to.
  std::map<CgroupPath, uint32_t> owners_;
  std::map<CgroupPath, std::vector<std::string>> children_;
  DeviceStack devices_;
  bool anyLimitedDirty_ = false;
  size_t walked_ = 0;
  // Triggered rescans.
  std::optional<CgroupDir> root_;            // kept open for the cgroup.stat reads
  std::optional<uint64_t> walkDescendants_;  // root's nr_descendants read before the walk
  TimePoint lastWalk_{};
  std::chrono::nanoseconds lastWalkCost_{0};  // wall time of the last walk (real clock)
  bool rescanWanted_ = false;
  uint64_t walks_ = 0;
  uint64_t triggeredWalks_ = 0;
  struct Young {
    uint64_t inode = 0;
    TimePoint until{};
  };
  std::map<CgroupPath, Young> young_;
  std::set<uint64_t> askedInodes_, unresolvedInodes_;
  std::set<CgroupPath> askedPaths_, unresolvedPaths_;
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
  // Detector tick (told the last snapshot's anyLimitedDirty() and whether a boost is in
  // force, see DetectorTick) + build(). `boosted`: the holders whose limits are lifted now.
  // `eventDriven`: the tick follows a trace event (DetectorTick::deferRescan).
  Result<Snapshot> tick(TimePoint now, const std::set<CgroupPath>& boosted = {},
                        bool eventDriven = false);
  // The cheap half of an idle tick (tracefs only: procfs must scan to see a sync; nothing
  // known, nothing boosted): the detector's
  // tick (drain, reconcile) and the root's nr_descendants. True when a full tick has nothing
  // new to plan: no syncer, no rescan owed, the cgroup tree unchanged since the last walk.
  bool quiet();
  // Wall time of the last tick's detector part (drain, reconcile, /proc rescan), for the
  // daemon's slow-tick log line.
  std::chrono::nanoseconds lastDetectorTime() const { return lastDetectorTime_; }

 private:
  Sensors() = default;
  void readSyncerUids(std::vector<Syncer>& syncers);
  struct KnownUid {
    TimePoint since{};
    std::optional<uint32_t> euid;
  };
  std::map<int64_t, KnownUid> uids_;  // per syncer tid, for its current sync call
  std::unique_ptr<CgroupFs> cgroups_;
  std::unique_ptr<ProcFs> proc_;
  std::unique_ptr<SysBlock> sys_;
  std::unique_ptr<TraceFs> tracefs_;
  std::unique_ptr<SyncDetector> detector_;
  std::unique_ptr<SnapshotBuilder> builder_;
  DetectorKind kind_ = DetectorKind::Procfs;
  std::string reason_;
  std::chrono::nanoseconds lastDetectorTime_{0};
};

}  // namespace cxiosync
