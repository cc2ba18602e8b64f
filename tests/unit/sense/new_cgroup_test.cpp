// SPDX-License-Identifier: GPL-2.0-or-later
// Cgroups created after SnapshotBuilder's last tree walk are learnt within about a second
// (cgroup.stat nr_descendants, unknown syncer cgroups/inodes, young cgroups), not at the
// next scheduled walk.
#include <gtest/gtest.h>

#include "daemon/kernel/cgroup_fs.h"
#include "daemon/sense/snapshot_builder.h"
#include "daemon/sense/syscalls.h"
#include "tests/unit/sense/fake_tree.h"

namespace cxiosync {
namespace {

using namespace std::chrono_literals;
using testing::FakeTree;

TEST(ParseNrDescendants, ReadsTheKernelsCgroupStat) {
  // Kernel 6.1 prints two lines; newer kernels add nr_subsys_* lines.
  EXPECT_EQ(parseNrDescendants("nr_descendants 27\nnr_dying_descendants 3\n"),
            std::optional<uint64_t>(27));
  EXPECT_EQ(parseNrDescendants("nr_descendants 0\nnr_dying_descendants 0\nnr_subsys_cpu 1\n"
                               "nr_subsys_io 5\nnr_dying_subsys_io 0\n"),
            std::optional<uint64_t>(0));
  EXPECT_EQ(parseNrDescendants("nr_dying_descendants 2\nnr_descendants 4\n"),
            std::optional<uint64_t>(4));
  EXPECT_EQ(parseNrDescendants(""), std::nullopt);
  EXPECT_EQ(parseNrDescendants("nr_dying_descendants 0\n"), std::nullopt);
  EXPECT_EQ(parseNrDescendants("nr_descendants -1\n"), std::nullopt);
  EXPECT_EQ(parseNrDescendants("nr_descendants 1 2\n"), std::nullopt);
  EXPECT_EQ(parseNrDescendants("nr_descendants\n"), std::nullopt);
}

class NewCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cg("", "");
    cg("cg1", "8:0 rbps=max wbps=1048576 riops=max wiops=max\n", 0, 0);
    cg("cg2", "", 0, 0);
    cg("cg2/x", "", 0, 0);
    descendants(3);
    auto fs = CgroupFs::open(tree.root());
    ASSERT_TRUE(fs.ok());
    cgfs = std::move(*fs);
    opts.treeRescanInterval = 30s;
    opts.minRescanGap = 1s;
    opts.newCgroupWatch = 10s;
  }
  void cg(const std::string& rel, const std::string& ioMax, uint64_t dirty = 0, uint64_t wb = 0) {
    std::string b = rel.empty() ? "" : rel + "/";
    tree.file(b + "cgroup.controllers", "io memory\n");
    if (!rel.empty()) {
      tree.file(b + "io.max", ioMax);
      tree.file(b + "memory.stat", "anon 0\nfile_dirty " + std::to_string(dirty) +
                                       "\nfile_writeback " + std::to_string(wb) + "\n");
    }
  }
  // The kernel updates the root's cgroup.stat on every mkdir/rmdir; the fake does it here.
  void descendants(uint64_t n) {
    tree.file("cgroup.stat", "nr_descendants " + std::to_string(n) + "\nnr_dying_descendants 0\n");
  }
  CgroupPath p(const char* s) { return *CgroupPath::parse(s); }
  static std::optional<uint64_t> wbps(const Snapshot& s, const CgroupPath& cg) {
    auto it = s.cgroups.find(cg);
    if (it == s.cgroups.end() || it->second.ioMax.empty()) return std::nullopt;
    return it->second.ioMax[0].limits.wbps;
  }
  FakeTree tree;
  std::unique_ptr<CgroupFs> cgfs;
  SnapshotBuilderOptions opts;
  TimePoint t0 = Clock::now();
};

TEST_F(NewCgroupTest, IdleTreeIsNotWalkedAgainBeforeTheInterval) {
  SnapshotBuilder b(*cgfs, nullptr, opts);
  for (auto t = 0ms; t < 29s; t += 100ms) ASSERT_TRUE(b.build({}, t0 + t).ok());
  EXPECT_EQ(b.walks(), 1u);
  ASSERT_TRUE(b.build({}, t0 + 30s).ok());
  EXPECT_EQ(b.walks(), 2u);
  EXPECT_EQ(b.triggeredWalks(), 0u);
  EXPECT_EQ(b.youngCgroups(), 0u);
}

TEST_F(NewCgroupTest, TreeCountChangeWalksWithinTheGapAndFindsTheNewLimit) {
  SnapshotBuilder b(*cgfs, nullptr, opts);
  ASSERT_TRUE(b.build({}, t0).ok());
  EXPECT_FALSE(b.anyLimitedDirty());
  // A transient unit with its own limit, dirtying 8 MiB, 300 ms after the walk.
  cg("new", "8:0 rbps=max wbps=1048576 riops=max wiops=max\n", 8 << 20, 0);
  descendants(4);
  auto snap = b.build({}, t0 + 300ms);  // rate-limited: no walk yet
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 1u);
  EXPECT_EQ(snap->cgroups.count(p("/new")), 0u);
  snap = b.build({}, t0 + 1s);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 2u);
  EXPECT_EQ(b.triggeredWalks(), 1u);
  EXPECT_EQ(wbps(*snap, p("/new")), std::optional<uint64_t>(1048576));
  EXPECT_EQ(snap->cgroups.at(p("/new")).inode, tree.inode("new"));
  EXPECT_EQ(snap->cgroups.at(p("/new")).fileDirty, 8u << 20);
  EXPECT_TRUE(b.anyLimitedDirty());
  EXPECT_EQ(b.pathOfInode(tree.inode("new")), std::optional<CgroupPath>(p("/new")));
  // Nothing changed since: no further walk.
  for (auto t = 1100ms; t < 5s; t += 100ms) ASSERT_TRUE(b.build({}, t0 + t).ok());
  EXPECT_EQ(b.walks(), 2u);
  // Removal changes the count too.
  tree.remove("new");
  descendants(3);
  snap = b.build({}, t0 + 5s);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 3u);
  EXPECT_EQ(snap->cgroups.count(p("/new")), 0u);
}

TEST_F(NewCgroupTest, ChurnWalksAtMostOncePerGap) {
  SnapshotBuilder b(*cgfs, nullptr, opts);
  ASSERT_TRUE(b.build({}, t0).ok());
  // A cgroup created and removed every 100 ms for 10 s.
  uint64_t n = 3;
  for (auto t = 100ms; t <= 10s; t += 100ms) {
    descendants(++n);
    ASSERT_TRUE(b.build({}, t0 + t).ok());
  }
  EXPECT_LE(b.walks(), 11u);
  EXPECT_GE(b.walks(), 10u);
}

TEST_F(NewCgroupTest, GapGrowsWithTheWalksCost) {
  SnapshotBuilder cheap(*cgfs, nullptr, opts);
  ASSERT_TRUE(cheap.build({}, t0).ok());
  EXPECT_EQ(cheap.rescanGap(), std::chrono::nanoseconds(1s));  // a 4-cgroup walk: << 50 ms
  // A walk "20x" as costly as it is: the gap is the walk's cost times the factor.
  opts.walkCostFactor = 4000000000u;  // any walk (> 10 us) -> > 40 s
  SnapshotBuilder costly(*cgfs, nullptr, opts);
  ASSERT_TRUE(costly.build({}, t0).ok());
  EXPECT_GT(costly.rescanGap(), std::chrono::nanoseconds(30s));
  descendants(4);
  ASSERT_TRUE(costly.build({}, t0 + 2s).ok());
  EXPECT_EQ(costly.walks(), 1u);
}

TEST_F(NewCgroupTest, LimitWrittenAfterTheWalkFoundTheCgroupIsReadWhileYoung) {
  SnapshotBuilder b(*cgfs, nullptr, opts);
  ASSERT_TRUE(b.build({}, t0).ok());
  // mkdir first (walk finds it unlimited), io.max a moment later.
  cg("later", "", 8 << 20, 0);
  descendants(4);
  auto snap = b.build({}, t0 + 1s);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 2u);
  EXPECT_EQ(b.youngCgroups(), 1u);
  EXPECT_EQ(snap->cgroups.count(p("/later")), 0u);
  EXPECT_FALSE(b.anyLimitedDirty());
  tree.file("later/io.max", "8:0 rbps=max wbps=2097152 riops=max wiops=max\n");
  snap = b.build({}, t0 + 1100ms);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 2u);  // no walk needed
  EXPECT_EQ(wbps(*snap, p("/later")), std::optional<uint64_t>(2097152));
  EXPECT_EQ(snap->cgroups.at(p("/later")).fileDirty, 8u << 20);
  EXPECT_TRUE(b.anyLimitedDirty());
  // Tracked as limited from now on: limit changes keep being read after the young window.
  tree.file("later/io.max", "8:0 rbps=max wbps=3000000 riops=max wiops=max\n");
  snap = b.build({}, t0 + 12s);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(wbps(*snap, p("/later")), std::optional<uint64_t>(3000000));
}

TEST_F(NewCgroupTest, YoungWindowExpires) {
  SnapshotBuilder b(*cgfs, nullptr, opts);
  ASSERT_TRUE(b.build({}, t0).ok());
  cg("quiet", "", 0, 0);
  descendants(4);
  ASSERT_TRUE(b.build({}, t0 + 1s).ok());
  EXPECT_EQ(b.youngCgroups(), 1u);
  ASSERT_TRUE(b.build({}, t0 + 10s).ok());
  EXPECT_EQ(b.youngCgroups(), 1u);
  ASSERT_TRUE(b.build({}, t0 + 11s).ok());  // 10 s after it was found
  EXPECT_EQ(b.youngCgroups(), 0u);
  // A limit written now is learnt at the next scheduled walk only.
  tree.file("quiet/io.max", "8:0 wbps=1000\n");
  auto snap = b.build({}, t0 + 12s);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->cgroups.count(p("/quiet")), 0u);
  snap = b.build({}, t0 + 30s);  // the walk at 1 s restarted the 30 s period
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->cgroups.count(p("/quiet")), 0u);
  snap = b.build({}, t0 + 31s);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 3u);
  EXPECT_EQ(b.triggeredWalks(), 1u);
  EXPECT_EQ(wbps(*snap, p("/quiet")), std::optional<uint64_t>(1000));
}

// systemctl set-property on an old unit: the walk knew the cgroup unlimited; a tracefs
// syncer that waits on it (or on a descendant) makes this very tick read the new limit,
// with no walk.
TEST_F(NewCgroupTest, LimitAddedToAnOldCgroupIsReadWhenASyncWaitsOnIt) {
  SnapshotBuilder b(*cgfs, nullptr, opts);
  ASSERT_TRUE(b.build({}, t0).ok());
  tree.file("cg2/io.max", "8:0 rbps=max wbps=2097152 riops=max wiops=max\n");
  tree.file("cg2/memory.stat", "anon 0\nfile_dirty 8388608\nfile_writeback 0\n");
  tree.file("cg2/x/memory.stat", "anon 0\nfile_dirty 8388608\nfile_writeback 0\n");
  auto snap = b.build({}, t0 + 5s);  // nobody syncs: not read before the walk
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->cgroups.count(p("/cg2")), 0u);
  Syncer s;
  s.tid = 7;
  s.pid = 7;
  s.cgroup = p("/cg1");
  s.waitsOn = {{tree.inode("cg2/x"), DevNum{8, 0}}};
  snap = b.build({s}, t0 + 5100ms);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 1u);
  EXPECT_EQ(wbps(*snap, p("/cg2")), std::optional<uint64_t>(2097152));
  EXPECT_EQ(snap->cgroups.at(p("/cg2/x")).fileDirty, 8u << 20);
  EXPECT_TRUE(b.anyLimitedDirty());
  // The unlimited named cgroup is watched, not re-armed on every tick.
  EXPECT_EQ(b.youngCgroups(), 2u);
  ASSERT_TRUE(b.build({s}, t0 + 5200ms).ok());
  EXPECT_EQ(b.youngCgroups(), 2u);
}

// Without cgroup.stat (or a create + remove between two ticks, which leaves the count
// unchanged) the syncers still name the cgroup: tracefs by inode, both by their own cgroup.
TEST_F(NewCgroupTest, UnknownWaitsOnInodeWalksRateLimitedAndOnlyOnce) {
  tree.remove("cgroup.stat");
  SnapshotBuilder b(*cgfs, nullptr, opts);
  ASSERT_TRUE(b.build({}, t0).ok());
  cg("unit", "8:0 rbps=max wbps=1048576 riops=max wiops=max\n", 8 << 20, 0);
  Syncer s;
  s.tid = 7;
  s.pid = 7;
  s.cgroup = p("/cg2/x");
  s.waitsOn = {{tree.inode("unit"), DevNum{8, 0}}};
  auto snap = b.build({s}, t0 + 400ms);  // within the gap: not yet
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 1u);
  EXPECT_EQ(snap->cgroups.count(p("/unit")), 0u);
  snap = b.build({s}, t0 + 1s);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 2u);
  EXPECT_EQ(b.triggeredWalks(), 1u);
  EXPECT_EQ(snap->cgroups.at(p("/unit")).inode, tree.inode("unit"));
  EXPECT_EQ(wbps(*snap, p("/unit")), std::optional<uint64_t>(1048576));
  EXPECT_TRUE(b.anyLimitedDirty());

  // An inode no walk can find (a removed cgroup whose writeback is still in flight): one
  // walk, then no more until the next scheduled walk however many syncers name it.
  s.waitsOn.push_back({987654321, DevNum{8, 0}});
  for (std::chrono::milliseconds t = 2s; t < 29s; t += 100ms)
    ASSERT_TRUE(b.build({s}, t0 + t).ok());
  EXPECT_EQ(b.walks(), 3u);
  EXPECT_EQ(b.triggeredWalks(), 2u);
}

TEST_F(NewCgroupTest, UnknownSyncerCgroupWalks) {
  tree.remove("cgroup.stat");
  SnapshotBuilder b(*cgfs, nullptr, opts);
  ASSERT_TRUE(b.build({}, t0).ok());
  cg("svc", "8:0 rbps=max wbps=1048576 riops=max wiops=max\n");
  Syncer s;
  s.tid = 9;
  s.pid = 9;
  s.cgroup = p("/svc");
  auto snap = b.build({s}, t0 + 2s);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(b.walks(), 2u);
  EXPECT_EQ(wbps(*snap, p("/svc")), std::optional<uint64_t>(1048576));
  // A syncer outside the tree (another cgroup namespace): one walk, not one per second.
  s.cgroup = p("/elsewhere");
  for (std::chrono::milliseconds t = 3s; t < 10s; t += 100ms)
    ASSERT_TRUE(b.build({s}, t0 + t).ok());
  EXPECT_EQ(b.walks(), 3u);
}

// The procfs detector scans only while a known limited cgroup holds dirty data: a new
// limited cgroup must become known without any syncer naming it.
TEST_F(NewCgroupTest, SensorsWithProcfsSeeTheSyncerOnceTheNewCgroupIsKnown) {
  FakeTree proc, sys, tracefs;
  proc.file("self/mountinfo", "");
  testing::addThread(proc, 100, 100, "sync", 'D', testing::procSyscallLine(hostSyscallTable().sync),
                     "/cg2/x");
  SenseRoots roots;
  roots.cgroup = tree.root();
  roots.proc = proc.root();
  roots.sys = sys.root();
  roots.tracefs = tracefs.root();
  GlobalSettings settings;
  settings.detector = DetectorKind::Procfs;
  auto sensors = Sensors::open(roots, settings);
  ASSERT_TRUE(sensors.ok()) << sensors.error().message;
  Sensors& se = **sensors;
  auto snap = se.tick(t0);
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  EXPECT_TRUE(snap->syncers.empty());  // nothing limited is dirty: no scan
  cg("new", "8:0 rbps=max wbps=1048576 riops=max wiops=max\n", 8 << 20, 0);
  descendants(4);
  snap = se.tick(t0 + 1s);
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  ASSERT_EQ(snap->syncers.size(), 1u);
  EXPECT_EQ(snap->syncers[0].tid, 100);
  EXPECT_EQ(wbps(*snap, p("/new")), std::optional<uint64_t>(1048576));
  EXPECT_EQ(snap->cgroups.at(p("/new")).fileDirty, 8u << 20);
}

}  // namespace
}  // namespace cxiosync
