// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sense/snapshot_builder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

#include "daemon/app/observe.h"
#include "tests/unit/sense/fake_tree.h"

namespace cxiosync {
namespace {

using testing::FakeTree;

class SnapshotBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cg("", "");
    cg("cg1", "8:0 rbps=max wbps=1048576 riops=max wiops=max\n", 8 << 20, 1 << 20);
    cg("cg1/a", "", 6 << 20, 0);
    cg("cg1/b", "", 0, 0);
    cg("cg2", "", 0, 0);
    cg("cg2/x", "", 0, 0);
    cg("reads", "8:0 rbps=1000 wbps=max riops=max wiops=max\n", 64 << 20, 0);
    cg("tenants", "", 0, 0);
    cg("tenants/t1", "8:0 wiops=100\n", 0, 0);
    cg("tenants/t1/deep", "", 0, 0);
    auto fs = CgroupFs::open(tree.root());
    ASSERT_TRUE(fs.ok());
    cgfs = std::move(*fs);
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
  CgroupPath p(const char* s) { return *CgroupPath::parse(s); }
  // Sensors over this cgroup tree and the given fake /proc, /sys and tracefs.
  Result<std::unique_ptr<Sensors>> openSensors(const FakeTree& proc, const FakeTree& sys,
                                               const FakeTree& tracefs) {
    ObserveOptions o;
    o.roots.cgroup = tree.root();
    o.roots.proc = proc.root();
    o.roots.sys = sys.root();
    o.roots.tracefs = tracefs.root();
    return Sensors::open(o.roots, o.settings);
  }
  FakeTree tree;
  std::unique_ptr<CgroupFs> cgfs;
};

TEST_F(SnapshotBuilderTest, LimitedSubtreesAncestorsAndSyncerCgroups) {
  SnapshotBuilder b(*cgfs, nullptr, SnapshotBuilderOptions{});
  Syncer s;
  s.tid = 5;
  s.pid = 5;
  s.cgroup = p("/cg2/x");
  auto snap = b.build({s}, Clock::now());
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  EXPECT_EQ(b.cgroupsWalked(), 10u);
  std::vector<std::string> paths;
  for (const auto& [path, st] : snap->cgroups) paths.push_back(path.display());
  // cg1 holds >= 1 MiB: its children are read; tenants/t1 holds nothing: its child not.
  // "reads" only limits reads: listed with its io.max, memory.stat not read.
  EXPECT_EQ(paths, (std::vector<std::string>{"/", "/cg1", "/cg1/a", "/cg1/b", "/cg2", "/cg2/x",
                                             "/reads", "/tenants", "/tenants/t1"}));
  EXPECT_EQ(snap->cgroups.at(p("/reads")).fileDirty, 0u);
  const auto& c1 = snap->cgroups.at(p("/cg1"));
  EXPECT_EQ(c1.inode, tree.inode("cg1"));
  EXPECT_EQ(c1.fileDirty, 8u << 20);
  EXPECT_EQ(c1.fileWriteback, 1u << 20);
  ASSERT_EQ(c1.ioMax.size(), 1u);
  EXPECT_EQ(c1.ioMax[0].limits.wbps, std::optional<uint64_t>(1048576));
  EXPECT_EQ(snap->cgroups.at(p("/cg1/a")).fileDirty, 6u << 20);
  EXPECT_EQ(snap->cgroups.at(p("/cg2/x")).inode, tree.inode("cg2/x"));
  EXPECT_TRUE(b.anyLimitedDirty());
  ASSERT_EQ(snap->syncers.size(), 1u);
  EXPECT_EQ(b.pathOfInode(tree.inode("cg1/a")), std::optional<CgroupPath>(p("/cg1/a")));
}

TEST_F(SnapshotBuilderTest, NothingDirtyMeansNothingCanMatter) {
  tree.file("cg1/memory.stat", "file_dirty 0\nfile_writeback 4096\n");
  SnapshotBuilder b(*cgfs, nullptr, SnapshotBuilderOptions{});
  auto snap = b.build({}, Clock::now());
  ASSERT_TRUE(snap.ok());
  EXPECT_FALSE(b.anyLimitedDirty());
  EXPECT_EQ(snap->cgroups.count(p("/cg1/a")), 0u);  // subtree skipped
  // Dirty data appears: seen on the next refresh, without a full walk.
  tree.file("cg1/memory.stat", "file_dirty 2097152\nfile_writeback 0\n");
  snap = b.build({}, Clock::now());
  ASSERT_TRUE(snap.ok());
  EXPECT_TRUE(b.anyLimitedDirty());
}

// While cxiosyncd lifts cg1's limit its io.max reads nothing (the kernel drops an all-max
// line), but cg1's dirty pages still matter (the boost serves them, metrics show them):
// a boosted holder's subtree is read as under a limit. Before: 0 bytes while boosted.
TEST_F(SnapshotBuilderTest, ABoostedHolderKeepsItsDirtyBytes) {
  SnapshotBuilder b(*cgfs, nullptr, SnapshotBuilderOptions{});
  auto t0 = Clock::now();
  ASSERT_TRUE(b.build({}, t0).ok());
  tree.file("cg1/io.max", "");
  b.setBoosted({p("/cg1")});
  auto snap = b.build({}, t0 + std::chrono::seconds(1));
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  ASSERT_EQ(snap->cgroups.count(p("/cg1")), 1u);
  EXPECT_EQ(snap->cgroups.at(p("/cg1")).fileDirty, 8u << 20);
  EXPECT_EQ(snap->cgroups.at(p("/cg1/a")).fileDirty, 6u << 20) << "and below it";
  EXPECT_TRUE(b.anyLimitedDirty());
  b.setBoosted({});
  snap = b.build({}, t0 + std::chrono::seconds(2));
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->cgroups.count(p("/cg1/a")), 0u) << "no limit, no boost: not read";
}

TEST_F(SnapshotBuilderTest, LimitChangesAreReadEveryRefreshNewLimitsAfterRescan) {
  SnapshotBuilder b(*cgfs, nullptr, SnapshotBuilderOptions{});
  auto t0 = Clock::now();
  ASSERT_TRUE(b.build({}, t0).ok());
  tree.file("cg1/io.max", "8:0 rbps=max wbps=2097152 riops=max wiops=max\n");
  tree.file("cg2/io.max", "8:0 rbps=max wbps=1000 riops=max wiops=max\n");
  auto snap = b.build({}, t0 + std::chrono::seconds(1));
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->cgroups.at(p("/cg1")).ioMax[0].limits.wbps, std::optional<uint64_t>(2097152));
  EXPECT_EQ(snap->cgroups.count(p("/cg2")), 0u);  // not walked yet
  b.invalidate();
  snap = b.build({}, t0 + std::chrono::seconds(2));
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->cgroups.at(p("/cg2")).ioMax.size(), 1u);
}

TEST_F(SnapshotBuilderTest, RemovedCgroupIsDroppedSilently) {
  SnapshotBuilder b(*cgfs, nullptr, SnapshotBuilderOptions{});
  auto t0 = Clock::now();
  ASSERT_TRUE(b.build({}, t0).ok());
  tree.remove("cg1/a");
  auto snap = b.build({}, t0 + std::chrono::seconds(1));
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  EXPECT_EQ(snap->cgroups.count(p("/cg1/a")), 0u);
  // A limited cgroup removed and recreated under the same name is a new cgroup.
  tree.remove("cg1");
  cg("cg1", "8:0 wbps=5\n", 0, 0);
  snap = b.build({}, t0 + std::chrono::seconds(2));
  ASSERT_TRUE(snap.ok());
  snap = b.build({}, t0 + std::chrono::seconds(3));  // after the triggered rescan
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->cgroups.at(p("/cg1")).inode, tree.inode("cg1"));
  EXPECT_FALSE(b.anyLimitedDirty());
}

TEST_F(SnapshotBuilderTest, JsonAndTextShowSyncersAndLimits) {
  SnapshotBuilder b(*cgfs, nullptr, SnapshotBuilderOptions{});
  Syncer s;
  s.tid = 133;
  s.pid = 130;
  s.comm = "sy\"nc\xff";  // a command name is bytes: written as \xff text
  s.cgroup = p("/cg2");
  s.since = Clock::now();
  s.waitsOn.push_back({tree.inode("cg1"), DevNum{254, 0}});
  s.waitsOn.push_back({1, DevNum{254, 0}});
  auto snap = b.build({s}, s.since);
  ASSERT_TRUE(snap.ok());
  std::string j = snapshotToJson(*snap, "tracefs");
  EXPECT_NE(j.find("\"tid\":133"), std::string::npos) << j;
  EXPECT_NE(j.find("\"comm\":\"sy\\\"nc\\\\xff\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"syscall\":\"sync\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"cgroup\":\"/cg1\",\"bdi\":\"254:0\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"cgroup_ino\":1,\"cgroup\":null"), std::string::npos) << j;
  EXPECT_NE(j.find("\"wbps\":1048576"), std::string::npos) << j;
  EXPECT_NE(j.find("\"rbps\":\"max\""), std::string::npos) << j;
  std::string t = snapshotToText(*snap, "tracefs");
  EXPECT_NE(t.find("waits on writeback of /cg1"), std::string::npos) << t;
  EXPECT_NE(t.find("io.max 8:0 rbps=max wbps=1048576"), std::string::npos) << t;
}

TEST(ObserveArgs, Parses) {
  auto o = parseObserveArgs({"--observe", "--once", "--json", "--detector=procfs",
                             "--poll-interval-ms=50", "--cgroup-root=/tmp/x", "--watch-fsync"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_TRUE(o->once);
  EXPECT_TRUE(o->json);
  EXPECT_EQ(o->settings.detector, DetectorKind::Procfs);
  EXPECT_EQ(o->settings.pollInterval, std::chrono::milliseconds(50));
  EXPECT_EQ(o->roots.cgroup, "/tmp/x");
  EXPECT_TRUE(o->settings.watchFsync);
  EXPECT_FALSE(parseObserveArgs({"--detector=ebpf"}).ok());
  EXPECT_FALSE(parseObserveArgs({"--poll-interval-ms=abc"}).ok());
  EXPECT_FALSE(parseObserveArgs({"--bogus"}).ok());
}

TEST_F(SnapshotBuilderTest, SensorsOnFakeRootsRunOnce) {
  FakeTree proc, sys, tracefs;
  proc.file("self/mountinfo", "");
  auto sensors = openSensors(proc, sys, tracefs);
  ASSERT_TRUE(sensors.ok()) << sensors.error().message;
  EXPECT_EQ((*sensors)->detectorKind(), DetectorKind::Procfs);
  auto snap = (*sensors)->tick(Clock::now());
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  EXPECT_TRUE(snap->syncers.empty());
  EXPECT_EQ(snap->cgroups.count(p("/cg1")), 1u);
}

// Issue 25: who a delegated tenant belongs to is the owner of its cgroup directory (systemd
// chowns a Delegate=yes unit's cgroup to its User=), and a chown after the walk (systemd's
// mkdir, then chown) is seen while the cgroup is young.
TEST_F(SnapshotBuilderTest, CgroupsCarryTheirDirectoryOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root";
  ASSERT_EQ(::chown((tree.root() + "/tenants/t1").c_str(), 2000, 2000), 0);
  SnapshotBuilderOptions opt;
  opt.minRescanGap = std::chrono::milliseconds(0);
  SnapshotBuilder b(*cgfs, nullptr, opt);
  const TimePoint t0 = Clock::now();
  auto snap = b.build({}, t0);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->cgroups.at(p("/tenants/t1")).ownerUid, 2000u);
  EXPECT_EQ(snap->cgroups.at(p("/cg1")).ownerUid, 0u);
  EXPECT_EQ(snap->cgroups.at(p("/")).ownerUid, std::nullopt);  // the root: nobody's tenant

  cg("tenants/ci", "8:0 wbps=1048576\n", 0, 0);  // created as root...
  b.invalidate();
  ASSERT_TRUE(b.build({}, t0 + std::chrono::seconds(1)).ok());
  ASSERT_EQ(::chown((tree.root() + "/tenants/ci").c_str(), 3000, 3000), 0);  // ...then chowned
  snap = b.build({}, t0 + std::chrono::seconds(2));
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->cgroups.at(p("/tenants/ci")).ownerUid, 3000u);
}

// The syncer's effective uid comes from /proc/TID/status (second field of "Uid:"), read once
// per sync call; a status without a well-formed Uid line gives no uid.
TEST_F(SnapshotBuilderTest, SyncersCarryTheirEffectiveUid) {
  FakeTree proc, sys, tracefs;
  proc.file("self/mountinfo", "");
  testing::addThread(proc, 101, 101, "cron", 'D', testing::procSyscallLine(162), "/cg2");
  proc.file("101/status", "Name:\tcron\nTgid:\t101\nUid:\t1000\t1000\t1000\t1000\n");
  testing::addThread(proc, 201, 201, "setuid", 'D', testing::procSyscallLine(162), "/cg2");
  proc.file("201/status", "Name:\tsetuid\nTgid:\t201\nUid:\t1000\t0\t0\t0\n");
  testing::addThread(proc, 301, 301, "odd", 'D', testing::procSyscallLine(162), "/cg2");
  proc.file("301/status", "Name:\todd\nUid:\t12x\n");
  auto sensors = openSensors(proc, sys, tracefs);
  ASSERT_TRUE(sensors.ok()) << sensors.error().message;
  auto snap = (*sensors)->tick(Clock::now());
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  std::map<int64_t, std::optional<uint32_t>> uids;
  for (const auto& sy : snap->syncers) uids[sy.tid] = sy.euid;
  ASSERT_EQ(uids.size(), 3u);
  EXPECT_EQ(uids[101], 1000u);
  EXPECT_EQ(uids[201], 0u);  // effective, not real
  EXPECT_EQ(uids[301], std::nullopt);
  // Same sync call: not read again (a changed file is not looked at).
  proc.file("101/status", "Name:\tcron\nTgid:\t101\nUid:\t5\t5\t5\t5\n");
  snap = (*sensors)->tick(Clock::now());
  ASSERT_TRUE(snap.ok());
  for (const auto& sy : snap->syncers) {
    if (sy.tid == 101) {
      EXPECT_EQ(sy.euid, 1000u);
    }
  }
}

}  // namespace
}  // namespace cxiosync
