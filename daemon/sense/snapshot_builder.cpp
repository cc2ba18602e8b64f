// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sense/snapshot_builder.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <set>

#include "daemon/kernel/caller_privilege.h"
#include "daemon/sense/auto_detector.h"

namespace cxiosync {

bool limitsWrites(const IoMaxEntry& e) {
  auto finite = [](const std::optional<uint64_t>& v) { return v && *v != kUnlimited; };
  return finite(e.limits.wbps) || finite(e.limits.wiops);
}

namespace {
bool anyWriteLimit(const std::vector<IoMaxEntry>& v) {
  for (const auto& e : v) {
    if (limitsWrites(e)) return true;
  }
  return false;
}
constexpr int kMaxDepth = 64;
}  // namespace

SnapshotBuilder::SnapshotBuilder(const CgroupFs& cgroups, const SysBlock* sys,
                                 SnapshotBuilderOptions options)
    : cgroups_(cgroups), sys_(sys), options_(options) {}

std::optional<CgroupPath> SnapshotBuilder::pathOfInode(uint64_t ino) const {
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return std::nullopt;
  return it->second;
}

void SnapshotBuilder::walk(const CgroupDir& dir, int depth) {
  ++walked_;
  inodes_[dir.inode()] = dir.path();
  pathInodes_[dir.path()] = dir.inode();
  if (!dir.path().isRoot()) {
    auto io = cgroups_.readIoMax(dir);
    if (io && *io && !(*io)->empty()) limited_[dir.path()] = std::move(**io);
  }
  if (depth >= kMaxDepth) return;
  auto kids = cgroups_.listChildren(dir);
  if (!kids) return;
  auto& names = children_[dir.path()];
  for (auto& name : *kids) {
    auto child = CgroupPath::parse(dir.path().relative() + "/" + name);
    if (!child) continue;
    // Open relative to the parent's fd: the child is the one inside *this* directory.
    auto fd = openBeneath(dir.fd(), name, O_RDONLY | O_DIRECTORY, Resolve::NoSymlinks,
                          dir.display() + "/" + name);
    if (!fd) continue;
    struct stat st;
    if (::fstat(fd->get(), &st) != 0) continue;
    names.push_back(name);
    owners_[*child] = static_cast<uint32_t>(st.st_uid);
    CgroupDir cd(std::move(*fd), *child, static_cast<uint64_t>(st.st_ino),
                 dir.display() + "/" + name);
    walk(cd, depth + 1);
  }
}

Status SnapshotBuilder::rescan(TimePoint now) {
  bool scheduled = nextRescan_ == TimePoint{} || now >= nextRescan_;
  auto root = cgroups_.openDir(CgroupPath{});
  if (!root) return root.error();
  // Read before the walk: a cgroup created during the walk makes the next check differ.
  auto nd = cgroups_.readNrDescendants(*root);
  walkDescendants_ = nd ? *nd : std::nullopt;
  std::map<CgroupPath, uint64_t> before = std::move(pathInodes_);
  limited_.clear();
  inodes_.clear();
  pathInodes_.clear();
  owners_.clear();
  children_.clear();
  walked_ = 0;
  auto started = Clock::now();  // real time, whatever `now` the caller passes
  walk(*root, 0);
  root_.emplace(std::move(*root));
  if (sys_) devices_ = sys_->buildStack();
  nextStackRebuild_ = now + options_.stackRebuildInterval;
  lastWalkCost_ = Clock::now() - started;

  // Young: cgroups this walk is the first to see (not at the very first walk: everything
  // is new then, and was configured before the daemon started). Kept while still there
  // (same inode) and not expired.
  if (walks_ > 0) {
    for (const auto& [path, ino] : pathInodes_) {
      auto b = before.find(path);
      if (b == before.end() || b->second != ino)
        young_[path] = Young{ino, now + options_.newCgroupWatch};
    }
  }
  for (auto it = young_.begin(); it != young_.end();) {
    auto p = pathInodes_.find(it->first);
    bool keep = p != pathInodes_.end() && p->second == it->second.inode && now < it->second.until;
    it = keep ? std::next(it) : young_.erase(it);
  }
  // What the syncers named and this walk did not find will not trigger again until the
  // next scheduled walk (which forgets the list: bounded memory, a late cgroup still found).
  if (scheduled) {
    unresolvedInodes_.clear();
    unresolvedPaths_.clear();
  } else {
    ++triggeredWalks_;
  }
  for (uint64_t ino : askedInodes_) {
    if (!inodes_.count(ino)) unresolvedInodes_.insert(ino);
  }
  for (const auto& p : askedPaths_) {
    if (!pathInodes_.count(p)) unresolvedPaths_.insert(p);
  }
  askedInodes_.clear();
  askedPaths_.clear();

  ++walks_;
  lastWalk_ = now;
  rescanWanted_ = false;
  nextRescan_ = now + options_.treeRescanInterval;
  return Ok{};
}

std::chrono::nanoseconds SnapshotBuilder::rescanGap() const {
  return std::max<std::chrono::nanoseconds>(options_.minRescanGap,
                                            lastWalkCost_ * options_.walkCostFactor);
}

bool SnapshotBuilder::treeChanged() const {
  if (!root_ || !walkDescendants_) return false;
  auto nd = cgroups_.readNrDescendants(*root_);
  return nd && *nd && **nd != *walkDescendants_;
}

bool SnapshotBuilder::noteSyncers(const std::vector<Syncer>& syncers, TimePoint now) {
  if (walks_ == 0) return false;  // the first refresh walks anyway
  bool namedUnlimited = false;
  for (const auto& sy : syncers) {
    if (!pathInodes_.count(sy.cgroup) && !unresolvedPaths_.count(sy.cgroup)) {
      askedPaths_.insert(sy.cgroup);
      rescanWanted_ = true;
    }
    for (const auto& w : sy.waitsOn) {
      auto known = inodes_.find(w.first);
      if (known == inodes_.end()) {
        if (!unresolvedInodes_.count(w.first)) {
          askedInodes_.insert(w.first);
          rescanWanted_ = true;
        }
        continue;
      }
      // A known cgroup the sync waits on, or one of its ancestors, may have been limited
      // since the walk (systemctl set-property on an old unit): watch them like young
      // ones, so this tick's refresh reads their io.max.
      for (const auto& a : known->second.ancestorsAndSelf()) {
        if (a.isRoot() || limited_.count(a) || young_.count(a)) continue;
        auto ino = pathInodes_.find(a);
        if (ino == pathInodes_.end()) continue;
        young_[a] = Young{ino->second, now + options_.newCgroupWatch};
        namedUnlimited = true;
      }
    }
  }
  return namedUnlimited || (rescanWanted_ && now >= lastWalk_ + rescanGap());
}

Status SnapshotBuilder::refresh(TimePoint now, bool walkIfDue) {
  bool due = nextRescan_ == TimePoint{} || (walkIfDue && now >= nextRescan_);
  if (walkIfDue && !due && !rescanWanted_ && treeChanged()) rescanWanted_ = true;
  if (!due && rescanWanted_ && now >= lastWalk_ + rescanGap()) due = true;
  if (due) {
    if (auto st = rescan(now); !st) return st;
  } else if (sys_ && now >= nextStackRebuild_) {
    devices_ = sys_->buildStack();
    nextStackRebuild_ = now + options_.stackRebuildInterval;
  }
  states_.clear();
  anyLimitedDirty_ = false;
  bool sawGone = false;
  readYoungLimits(now);
  readLimits(sawGone);
  readDirtySubtrees(sawGone);
  addAncestorsOfLimited();
  if (sawGone) rescanWanted_ = true;
  return Ok{};
}

void SnapshotBuilder::readYoungLimits(TimePoint now) {
  // Young cgroups: a limit written after the walk found them becomes known here, and they
  // are then tracked like any limited cgroup (readLimits reads them again).
  for (auto it = young_.begin(); it != young_.end();) {
    if (now >= it->second.until) {
      it = young_.erase(it);
      continue;
    }
    auto dir = cgroups_.openDirExpecting(it->first, it->second.inode);
    if (!dir) {
      it = young_.erase(it);  // removed: cgroup.stat tells the next refresh
      continue;
    }
    // systemd creates a delegated unit's cgroup, then chowns it to the unit's User=: the
    // walk that found it may have seen root as its owner.
    struct stat st;
    if (::fstat(dir->fd(), &st) == 0) owners_[it->first] = static_cast<uint32_t>(st.st_uid);
    if (limited_.count(it->first)) {
      ++it;
      continue;
    }
    auto io = cgroups_.readIoMax(*dir);
    if (io && *io && !(*io)->empty()) limited_[it->first] = std::move(**io);
    ++it;
  }
}

void SnapshotBuilder::readLimits(bool& sawGone) {
  // Fresh io.max of every cgroup that had a line at the last walk (or got one since).
  for (auto it = limited_.begin(); it != limited_.end();) {
    auto dir = cgroups_.openDirExpecting(it->first, pathInodes_[it->first]);
    if (!dir) {
      sawGone = true;
      it = limited_.erase(it);
      continue;
    }
    auto io = cgroups_.readIoMax(*dir);
    if (!io) {
      sawGone = sawGone || isGone(io.error());
      it = limited_.erase(it);
      continue;
    }
    it->second = *io ? std::move(**io) : std::vector<IoMaxEntry>{};
    CgroupState cs;
    cs.path = it->first;
    cs.inode = dir->inode();
    cs.ioMax = it->second;
    states_[it->first] = std::move(cs);
    ++it;
  }
}

void SnapshotBuilder::readDirtySubtrees(bool& sawGone) {
  // memory.stat of write-limited subtrees (hierarchical: skip the subtree when its top
  // holds too little), breadth-first.
  std::set<CgroupPath> tops = boosted_;  // a lifted limit is still the subtree's limit
  for (const auto& [path, entries] : limited_)
    if (anyWriteLimit(entries)) tops.insert(path);
  std::deque<CgroupPath> queue;
  for (const auto& path : tops) {
    bool underAnother = false;  // an ancestor already covers this subtree
    for (const auto& a : path.ancestorsAndSelf())
      if (a != path && tops.count(a)) underAnother = true;
    if (!underAnother) queue.push_back(path);
  }
  while (!queue.empty()) {
    CgroupPath p = std::move(queue.front());
    queue.pop_front();
    auto ino = pathInodes_.find(p);
    if (ino == pathInodes_.end()) continue;
    auto dir = cgroups_.openDirExpecting(p, ino->second);
    if (!dir) {
      sawGone = true;
      continue;
    }
    auto mem = cgroups_.readMemoryStat(*dir);
    if (!mem) {
      sawGone = sawGone || isGone(mem.error());
      continue;
    }
    CgroupState& cs = states_[p];
    cs.path = p;
    cs.inode = dir->inode();
    auto l = limited_.find(p);
    if (l != limited_.end()) cs.ioMax = l->second;
    if (*mem) {
      cs.fileDirty = (*mem)->fileDirty();
      cs.fileWriteback = (*mem)->fileWriteback();
    }
    uint64_t held = cs.fileDirty + cs.fileWriteback;
    if (held < options_.minDirtyBytes || held == 0) continue;
    anyLimitedDirty_ = true;
    auto kids = children_.find(p);
    if (kids == children_.end()) continue;
    for (const auto& name : kids->second) {
      auto child = CgroupPath::parse(p.relative() + "/" + name);
      if (child) queue.push_back(std::move(*child));
    }
  }
}

void SnapshotBuilder::addAncestorsOfLimited() {
  // Ancestors of limited cgroups (their io.max is part of the effective limit).
  std::vector<CgroupPath> present;
  for (const auto& [p, s] : states_) present.push_back(p);
  for (const auto& p : present) {
    for (const auto& a : p.ancestorsAndSelf()) {
      if (states_.count(a)) continue;
      CgroupState cs;
      cs.path = a;
      auto ino = pathInodes_.find(a);
      if (ino != pathInodes_.end()) cs.inode = ino->second;
      auto l = limited_.find(a);
      if (l != limited_.end()) cs.ioMax = l->second;
      states_[a] = std::move(cs);
    }
  }
}

Snapshot SnapshotBuilder::assemble(std::vector<Syncer> syncers, TimePoint now) const {
  Snapshot s;
  s.now = now;
  s.cgroups = states_;
  s.devices = devices_;
  for (auto& sy : syncers) {
    if (sy.targetDevice && sys_) {
      auto whole = sys_->wholeDisk(*sy.targetDevice);
      if (whole) sy.targetDevice = *whole;
    }
    for (const auto& a : sy.cgroup.ancestorsAndSelf()) {
      if (s.cgroups.count(a)) continue;
      CgroupState cs;
      cs.path = a;
      auto ino = pathInodes_.find(a);
      if (ino != pathInodes_.end()) {
        cs.inode = ino->second;
      } else if (auto i = cgroups_.inodeOf(a); i) {
        cs.inode = *i;
      }
      auto l = limited_.find(a);
      if (l != limited_.end()) cs.ioMax = l->second;
      s.cgroups[a] = std::move(cs);
    }
  }
  s.syncers = std::move(syncers);
  for (auto& [path, cs] : s.cgroups) {
    auto owner = owners_.find(path);
    if (owner != owners_.end()) cs.ownerUid = owner->second;
  }
  return s;
}

Result<Snapshot> SnapshotBuilder::build(std::vector<Syncer> syncers, TimePoint now) {
  if (auto st = refresh(now); !st) return st.error();
  if (noteSyncers(syncers, now)) {
    if (auto st = refresh(now); !st) return st.error();
  }
  return assemble(std::move(syncers), now);
}

Result<std::unique_ptr<Sensors>> Sensors::open(const SenseRoots& roots,
                                               const GlobalSettings& settings) {
  std::unique_ptr<Sensors> s(new Sensors());
  auto cg = CgroupFs::open(roots.cgroup);
  if (!cg) return cg.error();
  s->cgroups_ = std::move(*cg);
  auto proc = ProcFs::open(roots.proc);
  if (!proc) return proc.error();
  s->proc_ = std::move(*proc);
  if (auto sys = SysBlock::open(roots.sys); sys) s->sys_ = std::move(*sys);
  if (settings.detector != DetectorKind::Procfs) {
    if (auto tr = TraceFs::open(roots.tracefs); tr) s->tracefs_ = std::move(*tr);
  }
  auto choice = makeDetector(settings, s->tracefs_.get(), *s->proc_);
  if (!choice) return choice.error();
  s->detector_ = std::move(choice->detector);
  s->kind_ = choice->kind;
  s->reason_ = std::move(choice->reason);
  SnapshotBuilderOptions bo;
  bo.minDirtyBytes = settings.minDirtyBytes;
  // With tracefs the scheduled walk is only a safety net: tree changes are seen by the
  // root's nr_descendants every tick, and a sync's writeback_queue names the cgroups it
  // waits on (an old cgroup limited later is read then). A 1,000-cgroup walk every 30 s
  // was most of the idle cost in the VM (issue 15). procfs keeps 30 s: its gate knows
  // only the limits a walk has seen.
  if (s->kind_ == DetectorKind::Tracefs) bo.treeRescanInterval = std::chrono::minutes(5);
  s->builder_ = std::make_unique<SnapshotBuilder>(*s->cgroups_, s->sys_.get(), bo);
  return s;
}

// Whose sync it is (docs/policy-semantics.md §5): the effective uid from /proc/TID/status, read
// once per sync call (a thread cannot change its own credentials while it waits in the call).
// The text is the kernel's, parsed strictly; a thread gone before the read has no uid.
void Sensors::readSyncerUids(std::vector<Syncer>& syncers) {
  std::map<int64_t, KnownUid> next;
  for (Syncer& sy : syncers) {
    auto known = uids_.find(sy.tid);
    if (known != uids_.end() && known->second.since == sy.since) {
      sy.euid = known->second.euid;
    } else {
      const std::string rel = std::to_string(sy.tid) + "/" + procfile::kStatus;
      auto text = readFileAt(proc_->rootFd(), rel, proc_->root() + "/" + rel);
      if (text) {
        if (auto euid = parseStatusEuid(*text)) sy.euid = *euid;
      }
    }
    next[sy.tid] = KnownUid{sy.since, sy.euid};
  }
  uids_ = std::move(next);
}

Sensors::~Sensors() {
  builder_.reset();
  detector_.reset();  // removes the tracefs instance while tracefs_ is still open
}

bool Sensors::quiet() {
  if (!detector_->tick(DetectorTick{})) return false;
  return detector_->syncers().empty() && !detector_->rescanPending() && !builder_->treeChanged();
}

Result<Snapshot> Sensors::tick(TimePoint now, const std::set<CgroupPath>& boosted,
                               bool eventDriven) {
  builder_->setBoosted(boosted);
  if (auto st = builder_->refresh(now, !eventDriven); !st) return st.error();
  DetectorTick dt;
  dt.limitedDirty = builder_->anyLimitedDirty();
  dt.boosted = !boosted.empty();
  dt.deferRescan = eventDriven;
  const TimePoint t0 = Clock::now();
  auto ticked = detector_->tick(dt);
  lastDetectorTime_ = Clock::now() - t0;
  if (!ticked) return ticked.error();
  auto syncers = detector_->syncers();
  readSyncerUids(syncers);
  // An unknown cgroup among the syncers: walk now (rate-limited), so this tick's snapshot
  // already holds it and its limit.
  if (builder_->noteSyncers(syncers, now)) {
    if (auto st = builder_->refresh(now, !eventDriven); !st) return st.error();
  }
  return builder_->assemble(std::move(syncers), now);
}

}  // namespace cxiosync
