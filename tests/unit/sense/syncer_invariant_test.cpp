// SPDX-License-Identifier: GPL-2.0-or-later
// The detection invariant (docs/architecture.md, "Detection"; issue 15): a thread inside a
// watched call is in the syncer set within one tick and stays there until it leaves the
// call, whatever the detector and whatever the event order. Each test is a way the set
// lost a live syncer before: the procfs gate closing under the syncer's own boost, trace
// events merged out of order across CPUs, an enter never read, a caller already inside
// the call when the detector started.
#include <gtest/gtest.h>

#include "daemon/sense/proc_detector.h"
#include "daemon/sense/snapshot_builder.h"
#include "daemon/sense/trace_detector.h"
#include "tests/unit/sense/fake_tree.h"

namespace cxiosync {
namespace {

using testing::addThread;
using testing::FakeTree;
using testing::procSyscallLine;

std::string line(const std::string& comm, int64_t tid, const std::string& body) {
  return "   " + comm + "-" + std::to_string(tid) + "     [001] .....    12.345678: " + body;
}

class SyncerInvariantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    addThread(proc, 133, 133, "sync", 'D', procSyscallLine(162), "/cg3");
    open();
  }
  void open() {
    auto p = ProcFs::open(proc.root());
    ASSERT_TRUE(p.ok());
    fs = std::move(*p);
  }
  TraceDetectorOptions opts() {
    TraceDetectorOptions o;
    o.syscalls = &kSyscallsX86_64;
    return o;
  }
  // A detector past its startup rescans, so a test sees only what events and the
  // invariant's own rescans do.
  std::unique_ptr<TraceDetector> settled() {
    auto det = std::make_unique<TraceDetector>(*fs, opts());
    proc.remove("133");
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(det->tick(DetectorTick{}).ok());
    EXPECT_TRUE(det->syncers().empty());
    addThread(proc, 133, 133, "sync", 'D', procSyscallLine(162), "/cg3");
    return det;
  }
  static std::vector<int64_t> tids(const std::vector<Syncer>& v) {
    std::vector<int64_t> out;
    for (const auto& s : v) out.push_back(s.tid);
    return out;
  }
  FakeTree proc;
  std::unique_ptr<ProcFs> fs;
};

// The lead's clue: the gate (a limited cgroup is dirty) turns false as soon as the boost
// lifts the only limit; the scan then reported no syncer, the boost ended "syncers-left",
// the next tick saw the limit and the syncer again: boost/restore every ~100 ms.
TEST_F(SyncerInvariantTest, ProcfsKeepsAKnownSyncerWhenTheGateCloses) {
  ProcDetector det(*fs, ProcDetectorOptions{false, &kSyscallsX86_64, true});
  ASSERT_TRUE(det.tick(DetectorTick{true, false}).ok());
  ASSERT_EQ(tids(det.syncers()), (std::vector<int64_t>{133}));
  (void)det.changed();
  ASSERT_TRUE(det.tick(DetectorTick{false, false}).ok());
  EXPECT_EQ(tids(det.syncers()), (std::vector<int64_t>{133}));
  EXPECT_FALSE(det.changed());
  // It leaves: the next scan sees that, and then the gate may close again.
  addThread(proc, 133, 133, "sync", 'S', procSyscallLine(0), "/cg3");
  ASSERT_TRUE(det.tick(DetectorTick{false, false}).ok());
  EXPECT_TRUE(det.syncers().empty());
  EXPECT_TRUE(det.changed());
  addThread(proc, 140, 140, "sync", 'D', procSyscallLine(162), "/cg3");
  ASSERT_TRUE(det.tick(DetectorTick{false, false}).ok());
  EXPECT_TRUE(det.syncers().empty());
  EXPECT_TRUE(det.lastScan().skipped);
  // A boost in force keeps it looking even with nothing known.
  ASSERT_TRUE(det.tick(DetectorTick{false, true}).ok());
  EXPECT_EQ(tids(det.syncers()), (std::vector<int64_t>{140}));
}

// The same through Sensors, with the fake cgroup tree: /cg1 limited and dirty, then its
// limit lifted (what the executor writes for a boost).
TEST_F(SyncerInvariantTest, SensorsKeepTheSyncerWhoseBoostLiftedTheOnlyDirtyLimit) {
  FakeTree cgroups, sys, tracefs;
  auto cg = [&](const std::string& rel, const std::string& ioMax, uint64_t dirty) {
    std::string b = rel.empty() ? "" : rel + "/";
    cgroups.file(b + "cgroup.controllers", "io memory\n");
    if (rel.empty()) return;
    cgroups.file(b + "io.max", ioMax);
    cgroups.file(b + "memory.stat", "file_dirty " + std::to_string(dirty) + "\nfile_writeback 0\n");
  };
  cg("", "", 0);
  cg("cg1", "8:0 rbps=max wbps=1048576 riops=max wiops=max\n", 8 << 20);
  cg("cg3", "", 0);
  proc.file("self/mountinfo", "");
  SenseRoots roots{cgroups.root(), proc.root(), sys.root(), tracefs.root()};
  GlobalSettings settings;
  settings.detector = DetectorKind::Procfs;
  auto sensors = Sensors::open(roots, settings);
  ASSERT_TRUE(sensors.ok()) << sensors.error().message;
  const TimePoint t0 = Clock::now();
  auto snap = (*sensors)->tick(t0);
  ASSERT_TRUE(snap.ok());
  snap = (*sensors)->tick(t0 + std::chrono::milliseconds(100));
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(tids(snap->syncers), (std::vector<int64_t>{133}));
  cgroups.file("cg1/io.max", "8:0 rbps=max wbps=max riops=max wiops=max\n");  // boosted
  for (int i = 2; i < 6; ++i) {
    snap = (*sensors)->tick(t0 + i * std::chrono::milliseconds(100));
    ASSERT_TRUE(snap.ok());
    EXPECT_EQ(tids(snap->syncers), (std::vector<int64_t>{133})) << "tick " << i;
  }
}

// An idle tick only looks (issue 15, idle cost): quiet() while nothing syncs and the tree is
// as walked; a cgroup made since the walk (cgroup.stat's nr_descendants) asks for a full one.
TEST_F(SyncerInvariantTest, SensorsQuietUntilTheCgroupTreeChanges) {
  FakeTree cgroups, sys, tracefs;
  proc.remove("133");
  proc.file("self/mountinfo", "");
  cgroups.file("cgroup.controllers", "io memory\n");
  cgroups.file("cgroup.stat", "nr_descendants 1\nnr_dying_descendants 0\n");
  cgroups.file("cg1/io.max", "8:0 rbps=max wbps=1048576 riops=max wiops=max\n");
  cgroups.file("cg1/memory.stat", "file_dirty 0\nfile_writeback 0\n");
  SenseRoots roots{cgroups.root(), proc.root(), sys.root(), tracefs.root()};
  GlobalSettings settings;
  settings.detector = DetectorKind::Procfs;
  auto sensors = Sensors::open(roots, settings);
  ASSERT_TRUE(sensors.ok()) << sensors.error().message;
  ASSERT_TRUE((*sensors)->tick(Clock::now()).ok());
  EXPECT_TRUE((*sensors)->quiet());
  cgroups.file("cg2/io.max", "");
  cgroups.file("cgroup.stat", "nr_descendants 2\nnr_dying_descendants 0\n");
  EXPECT_FALSE((*sensors)->quiet());
}

// Per-CPU buffers merged by unsynchronised clocks: the exit of call 1 read after the enter
// of call 2 (same thread). /proc shows it blocked in sync: it stays.
TEST_F(SyncerInvariantTest, TraceExitReadAfterTheNextEnterDoesNotDropTheCaller) {
  auto det = settled();
  det->feedLine(line("worker", 133, "sys_sync()"));       // call 1
  det->feedLine(line("worker", 133, "sys_sync()"));       // call 2's enter, merged early
  det->feedLine(line("worker", 133, "sys_sync -> 0x0"));  // call 1's exit, merged late
  EXPECT_EQ(tids(det->syncers()), (std::vector<int64_t>{133}));
  EXPECT_EQ(det->exitsOverruled(), 1u);
  ASSERT_TRUE(det->tick(DetectorTick{}).ok());
  EXPECT_EQ(tids(det->syncers()), (std::vector<int64_t>{133}));
  // Call 2 ends: /proc shows it back in user space, its exit drops it.
  addThread(proc, 133, 133, "sync", 'S', procSyscallLine(0), "/cg3");
  det->feedLine(line("worker", 133, "sys_sync -> 0x0"));
  EXPECT_TRUE(det->syncers().empty());
}

// An exit of another syscall than the tracked one cannot end the tracked call.
TEST_F(SyncerInvariantTest, TraceExitOfAnotherSyscallDoesNotDropTheCaller) {
  auto det = settled();
  det->feedLine(line("worker", 133, "sys_sync()"));
  addThread(proc, 133, 133, "sync", 'R', "running\n", "/cg3");
  det->feedLine(line("worker", 133, "sys_syncfs -> 0x0"));
  EXPECT_EQ(tids(det->syncers()), (std::vector<int64_t>{133}));
}

// The enter was merged before an exit that was then dropped, and the thread was running at
// that moment: the tick after the exit rescans /proc and finds it in D.
TEST_F(SyncerInvariantTest, TraceTickAfterAnExitFindsAMisorderedCaller) {
  auto det = settled();
  addThread(proc, 133, 133, "sync", 'R', "running\n", "/cg3");
  det->feedLine(line("worker", 133, "sys_sync()"));
  det->feedLine(line("worker", 133, "sys_sync -> 0x0"));
  EXPECT_TRUE(det->syncers().empty());  // /proc could not tell: the exit wins for now
  addThread(proc, 133, 133, "sync", 'D', procSyscallLine(162), "/cg3");
  ASSERT_TRUE(det->tick(DetectorTick{}).ok());
  EXPECT_EQ(tids(det->syncers()), (std::vector<int64_t>{133}));
  EXPECT_EQ(det->foundByRescan(), 1u);
}

// An enter never read (its wakeup missed, its /proc read failed): while another syncer is
// known, or a limit is boosted, every tick rescans /proc.
TEST_F(SyncerInvariantTest, TraceTickFindsAnUnreadEnterWhileSomethingIsKnownOrBoosted) {
  auto det = settled();
  addThread(proc, 150, 150, "dd", 'D', procSyscallLine(306, 3), "/cg4");
  ASSERT_TRUE(det->tick(DetectorTick{true, false}).ok());
  EXPECT_TRUE(det->syncers().empty());  // nothing known nor boosted: events only
  ASSERT_TRUE(det->tick(DetectorTick{false, true}).ok());
  ASSERT_EQ(tids(det->syncers()), (std::vector<int64_t>{133, 150}));
  // Its enter read later is the same call: not a new one (its `since` is kept).
  const TimePoint since = det->syncers()[1].since;
  (void)det->changed();
  det->feedLine(line("dd", 150, "sys_syncfs(fd: 3)"));
  EXPECT_EQ(det->syncers()[1].since, since);
  EXPECT_FALSE(det->changed());
}

// An event-driven tick (a sync just entered: plan its boost first) defers the /proc rescan
// an exit made due; the detector says so until a timer tick has run it, so the daemon keeps
// ticking at the poll period instead of its idle period (issue 15, detection latency).
TEST_F(SyncerInvariantTest, TraceEventTickDefersTheRescanToTheNextTimerTick) {
  auto det = settled();
  EXPECT_FALSE(det->rescanPending());
  addThread(proc, 133, 133, "sync", 'R', "running\n", "/cg3");
  det->feedLine(line("worker", 133, "sys_sync()"));
  det->feedLine(line("worker", 133, "sys_sync -> 0x0"));
  EXPECT_TRUE(det->syncers().empty());
  addThread(proc, 133, 133, "sync", 'D', procSyscallLine(162), "/cg3");
  DetectorTick urgent;
  urgent.deferRescan = true;
  ASSERT_TRUE(det->tick(urgent).ok());
  EXPECT_TRUE(det->syncers().empty());  // not walked on the event's tick
  EXPECT_TRUE(det->rescanPending());
  ASSERT_TRUE(det->tick(DetectorTick{}).ok());
  EXPECT_EQ(tids(det->syncers()), (std::vector<int64_t>{133}));
  EXPECT_EQ(det->foundByRescan(), 1u);
}

// A caller already inside sync() and running when the detector starts: its enter event
// predates the instance, start()'s scan saw "running". The first ticks rescan.
TEST_F(SyncerInvariantTest, TraceFirstTicksFindACallerThatWasRunningAtStart) {
  addThread(proc, 133, 133, "sync", 'R', "running\n", "/cg3");
  TraceDetector det(*fs, opts());
  ASSERT_TRUE(det.tick(DetectorTick{}).ok());
  EXPECT_TRUE(det.syncers().empty());
  addThread(proc, 133, 133, "sync", 'D', procSyscallLine(162), "/cg3");
  ASSERT_TRUE(det.tick(DetectorTick{}).ok());
  EXPECT_EQ(tids(det.syncers()), (std::vector<int64_t>{133}));
}

}  // namespace
}  // namespace cxiosync
