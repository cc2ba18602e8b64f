// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sense/trace_detector.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/sense/auto_detector.h"
#include "tests/unit/sense/fake_tree.h"

namespace cxiosync {
namespace {

using testing::addThread;
using testing::FakeTree;
using testing::procSyscallLine;

std::string line(const std::string& comm, int64_t tid, const std::string& body) {
  return "   " + comm + "-" + std::to_string(tid) + "     [001] .....    12.345678: " + body;
}
std::string wbq(int64_t tid, const std::string& bdi, uint64_t ino,
                const std::string& reason = "sync") {
  return line("sync", tid,
              "writeback_queue: bdi " + bdi + ": sb_dev " + bdi +
                  " nr_pages=9223372036854775807 sync_mode=1 kupdate=0 range_cyclic=0 "
                  "background=0 reason=" +
                  reason + " cgroup_ino=" + std::to_string(ino));
}

class TraceDetectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    addThread(proc, 133, 133, "sync", 'D', procSyscallLine(162), "/cg2");
    addThread(proc, 140, 140, "app", 'S', procSyscallLine(0), "/cg2");
    addThread(proc, 140, 141, "app-flush", 'D', procSyscallLine(306, 7), "/cg2");
    addThread(proc, 150, 150, "dd", 'D', procSyscallLine(162), "/cg1");
    proc.file("data/file", "x");
    proc.symlink(proc.path("data/file"), "141/fd/7");
    auto p = ProcFs::open(proc.root());
    ASSERT_TRUE(p.ok());
    fs = std::move(*p);
  }
  TraceDetectorOptions opts(bool watchFsync = false) {
    TraceDetectorOptions o;
    o.watchFsync = watchFsync;
    o.syscalls = &kSyscallsX86_64;
    return o;
  }
  FakeTree proc;
  std::unique_ptr<ProcFs> fs;
};

TEST_F(TraceDetectorTest, EnterWritebackExit) {
  TraceDetector det(*fs, opts());
  det.feedLine(line("sync", 133, "sys_sync()"));
  auto s = det.syncers();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].tid, 133);
  EXPECT_EQ(s[0].pid, 133);
  EXPECT_EQ(s[0].cgroup.display(), "/cg2");
  EXPECT_EQ(s[0].syscall, SyncSyscall::Sync);
  EXPECT_TRUE(det.changed());
  det.feedLine(wbq(133, "254:0", 23));
  det.feedLine(wbq(133, "254:0", 23));               // duplicates collapse
  det.feedLine(wbq(133, "254:0", 1, "background"));  // not a sync wait
  s = det.syncers();
  ASSERT_EQ(s[0].waitsOn.size(), 1u);
  EXPECT_EQ(s[0].waitsOn[0].first, 23u);
  EXPECT_EQ(s[0].waitsOn[0].second, (DevNum{254, 0}));
  // Back in user space when its exit is read (an exit while /proc still shows it blocked
  // in sync is the exit of an earlier call: syncer_invariant_test.cpp).
  addThread(proc, 133, 133, "sync", 'S', procSyscallLine(0), "/cg2");
  det.feedLine(line("sync", 133, "sys_sync -> 0x0"));
  EXPECT_TRUE(det.syncers().empty());
  EXPECT_EQ(det.linesSeen(), 5u);
}

TEST_F(TraceDetectorTest, ThreadOfAMultiThreadedProcess) {
  TraceDetector det(*fs, opts());
  det.feedLine(line("app-flush", 141, "sys_syncfs(fd: 7)"));
  auto s = det.syncers();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].tid, 141);
  EXPECT_EQ(s[0].pid, 140);
  EXPECT_EQ(s[0].comm, "app-flush");
  EXPECT_EQ(s[0].syscall, SyncSyscall::Syncfs);
  struct stat st {};
  ::stat(proc.path("data/file").c_str(), &st);
  EXPECT_EQ(s[0].targetDevice,
            std::optional<DevNum>(DevNum{::major(st.st_dev), ::minor(st.st_dev)}));
}

TEST_F(TraceDetectorTest, WritebackFromAnotherThreadGoesToAllSyncSyncers) {
  TraceDetector det(*fs, opts());
  det.feedLine(line("sync", 133, "sys_sync()"));
  det.feedLine(line("dd", 150, "sys_sync()"));
  det.feedLine(wbq(150, "254:0", 23));  // emitted by a syncer: only its own
  det.feedLine(wbq(77, "8:0", 42));     // a kworker: every sync/syncfs syncer
  auto s = det.syncers();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].waitsOn.size(), 1u);  // 133: (42, 8:0)
  EXPECT_EQ(s[0].waitsOn[0].first, 42u);
  EXPECT_EQ(s[1].waitsOn.size(), 2u);        // 150: (23), (42)
  EXPECT_EQ(s[1].cgroup.display(), "/cg1");  // a self-sync is reported as such
}

TEST_F(TraceDetectorTest, FlusherWritebackStartForSyncGoesToSyncCallers) {
  TraceDetector det(*fs, opts());
  det.feedLine(line("sync", 133, "sys_sync()"));
  det.feedLine(line("app-flush", 141, "sys_syncfs(fd: 7)"));
  auto start = [](const std::string& reason, uint64_t ino) {
    return line("kworker/u4:2", 31,
                "writeback_start: bdi 254:0: sb_dev 0:0 nr_pages=3072 sync_mode=0 kupdate=0 "
                "range_cyclic=1 background=0 reason=" +
                    reason + " cgroup_ino=" + std::to_string(ino));
  };
  det.feedLine(start("periodic", 50));
  det.feedLine(start("sync", 23));
  det.feedLine(start("sync", 23));
  auto s = det.syncers();
  ASSERT_EQ(s.size(), 2u);
  ASSERT_EQ(s[0].waitsOn.size(), 1u);  // sync(): (23, 254:0)
  EXPECT_EQ(s[0].waitsOn[0], (std::pair<uint64_t, DevNum>{23, DevNum{254, 0}}));
  EXPECT_TRUE(s[1].waitsOn.empty());  // syncfs does not wake the flushers
}

TEST_F(TraceDetectorTest, FsyncFamilyOnlyWhenWatched) {
  addThread(proc, 160, 160, "pg", 'D', procSyscallLine(74, 7), "/db");
  TraceDetector off(*fs, opts(false));
  off.feedLine(line("pg", 160, "sys_fsync(fd: 7)"));
  EXPECT_TRUE(off.syncers().empty());
  TraceDetector on(*fs, opts(true));
  on.feedLine(line("pg", 160, "sys_fsync(fd: 7)"));
  ASSERT_EQ(on.syncers().size(), 1u);
  addThread(proc, 160, 160, "pg", 'S', procSyscallLine(0), "/db");
  on.feedLine(line("pg", 160, "sys_fsync -> 0x0"));
  EXPECT_TRUE(on.syncers().empty());
  // msync: only MS_SYNC (4) waits.
  on.feedLine(line("pg", 160,
                   "sys_msync(unsigned long start: 7f0000000000, size_t len: 1000, int flags: 1)"));
  EXPECT_TRUE(on.syncers().empty());
  on.feedLine(line("pg", 160,
                   "sys_msync(unsigned long start: 7f0000000000, size_t len: 1000, int flags: 4)"));
  EXPECT_EQ(on.syncers().size(), 1u);
}

TEST_F(TraceDetectorTest, EnterOfAThreadAlreadyGoneIsIgnored) {
  TraceDetector det(*fs, opts());
  det.feedLine(line("ghost", 999, "sys_sync()"));
  det.feedLine(line("ghost", 999, "sys_sync -> 0x0"));
  det.feedLine("garbage that is not a trace line");
  det.feedLine("");
  EXPECT_TRUE(det.syncers().empty());
}

TEST_F(TraceDetectorTest, ReconcileDropsDeadReusedAndFinishedThreads) {
  TraceDetector det(*fs, opts());
  det.feedLine(line("sync", 133, "sys_sync()"));
  det.feedLine(line("app-flush", 141, "sys_syncfs(fd: 7)"));
  det.feedLine(line("dd", 150, "sys_sync()"));
  ASSERT_EQ(det.syncers().size(), 3u);
  ASSERT_TRUE(det.reconcile().ok());
  EXPECT_EQ(det.syncers().size(), 3u);  // all still inside
  // 133 killed inside sync (exit never traced), 141 left syncfs and now reads,
  // 150 died and its tid was reused by a new process also calling sync.
  proc.remove("133");
  addThread(proc, 140, 141, "app-flush", 'S', procSyscallLine(0), "/cg2");
  addThread(proc, 150, 150, "newproc", 'D', procSyscallLine(162), "/cg2", 9999);
  (void)det.changed();
  ASSERT_TRUE(det.reconcile().ok());
  EXPECT_TRUE(det.syncers().empty());
  EXPECT_TRUE(det.changed());
}

TEST_F(TraceDetectorTest, RunningThreadIsKeptUntilItsExit) {
  TraceDetector det(*fs, opts());
  det.feedLine(line("sync", 133, "sys_sync()"));
  addThread(proc, 133, 133, "sync", 'R', "running\n", "/cg2");
  ASSERT_TRUE(det.reconcile().ok());
  EXPECT_EQ(det.syncers().size(), 1u);
}

TEST_F(TraceDetectorTest, LostEventsReconcileAndRescan) {
  TraceDetector det(*fs, opts());
  det.feedLine(line("sync", 133, "sys_sync()"));
  // Its exit is lost in an overrun; meanwhile 150 entered sync (enter lost too).
  addThread(proc, 133, 133, "sync", 'S', procSyscallLine(0), "/cg2");
  det.feedLine("CPU:1 [LOST 1234 EVENTS]");
  EXPECT_EQ(det.lostEvents(), 1234u);
  auto s = det.syncers();
  // 133 dropped; 141 (syncfs, D) and 150 (sync, D) found by the /proc rescan.
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].tid, 141);
  EXPECT_EQ(s[0].pid, 140);
  EXPECT_EQ(s[1].tid, 150);
  EXPECT_EQ(s[1].cgroup.display(), "/cg1");
  // Their exits still work.
  addThread(proc, 150, 150, "dd", 'S', procSyscallLine(0), "/cg1");
  det.feedLine(line("dd", 150, "sys_sync -> 0x0"));
  EXPECT_EQ(det.syncers().size(), 1u);
}

TEST(TraceDetectorEvents, EventList) {
  auto e = TraceDetector::eventsFor(false);
  EXPECT_EQ(e,
            (std::vector<std::string>{"syscalls/sys_enter_sync", "syscalls/sys_exit_sync",
                                      "syscalls/sys_enter_syncfs", "syscalls/sys_exit_syncfs",
                                      "writeback/writeback_queue", "writeback/writeback_start"}));
  EXPECT_EQ(TraceDetector::eventsFor(true).size(), 14u);
}

// --- instance management against a fake tracefs ---

// A tracefs whose mkdir populates the instance like the kernel does.
class FakeKernelTraceFs : public TraceFs {
 public:
  FakeKernelTraceFs(const FakeTree& tree, std::vector<std::string> events)
      : TraceFs(UniqueFd(::open(tree.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
                tree.root()),
        tree_(tree),
        events_(std::move(events)) {}
  Status createInstance(const std::string& name) override {
    auto st = TraceFs::createInstance(name);
    if (!st) return st;
    std::string base = std::string("instances/") + name;
    tree_.file(base + "/buffer_size_kb", "");
    tree_.file(base + "/tracing_on", "");
    tree_.file(base + "/buffer_percent", "");
    tree_.file(base + "/trace_clock", "");
    for (const auto& e : events_) tree_.file(base + "/events/" + e + "/enable", "");
    tree_.file(base + "/trace_pipe", pipeContent);
    return Ok{};
  }
  Status removeInstance(const std::string& name) override {
    removed.push_back(name);
    tree_.remove(std::string("instances/") + name);
    return Ok{};
  }
  std::string pipeContent;
  std::vector<std::string> removed;

 private:
  const FakeTree& tree_;
  std::vector<std::string> events_;
};

class TraceInstanceTest : public TraceDetectorTest {
 protected:
  void SetUp() override {
    TraceDetectorTest::SetUp();
    tracefs.dir("instances");
  }
  FakeTree tracefs;
};

TEST_F(TraceInstanceTest, StartEnablesEventsReadsPipeAndRemovesOnExit) {
  FakeKernelTraceFs tfs(tracefs, TraceDetector::eventsFor(false));
  tfs.pipeContent = line("sync", 133, "sys_sync()") + "\n" + wbq(133, "254:0", 23) + "\n" +
                    line("dd", 150, "sys_sync()") + "\n" + line("dd", 150, "sys_sy");
  auto o = opts();
  o.instanceName = "cxiosync-test";
  o.bufferSizeKb = 256;
  {
    auto det = TraceDetector::start(tfs, *fs, o);
    ASSERT_TRUE(det.ok()) << det.error().message;
    const std::string base = "instances/cxiosync-test/";
    EXPECT_EQ(tracefs.read(base + "buffer_size_kb"), "256");
    EXPECT_EQ(tracefs.read(base + "buffer_percent"), "0");
    EXPECT_EQ(tracefs.read(base + "trace_clock"), "mono");
    EXPECT_EQ(tracefs.read(base + "events/syscalls/sys_enter_sync/enable"), "1");
    EXPECT_EQ(tracefs.read(base + "events/writeback/writeback_queue/enable"), "1");
    EXPECT_EQ(tracefs.read(base + "events/writeback/writeback_start/enable"), "1");
    EXPECT_EQ(tracefs.read(base + "tracing_on"), "1");
    EXPECT_GE((*det)->fd(), 0);
    // start() already picked up threads sitting in sync in /proc (133, 141 syncfs, 150).
    EXPECT_EQ((*det)->syncers().size(), 3u);
    EXPECT_EQ((*det)->drain(), 3u);  // the partial last line waits for its newline
    auto s = (*det)->syncers();
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].waitsOn.size(), 1u);
  }
  EXPECT_EQ(tfs.removed, (std::vector<std::string>{"cxiosync-test"}));
  EXPECT_FALSE(tracefs.exists("instances/cxiosync-test"));
}

// The pipe's wakeup can be missed (kernel ring buffer poll race; VM 6.1, issue 15: a
// sync() unseen for 4 minutes): each tick reads the pipe itself.
TEST_F(TraceInstanceTest, TickReadsThePipeWithoutAWakeup) {
  FakeKernelTraceFs tfs(tracefs, TraceDetector::eventsFor(false));
  addThread(proc, 170, 170, "sync", 'R', "running\n", "/cg3");
  auto o = opts();
  o.instanceName = "cxiosync-test";
  auto det = TraceDetector::start(tfs, *fs, o);
  ASSERT_TRUE(det.ok()) << det.error().message;
  EXPECT_EQ((*det)->syncers().size(), 3u);  // 133, 141, 150 from /proc; 170 is running
  tracefs.file("instances/cxiosync-test/trace_pipe", line("sync", 170, "sys_sync()") + "\n");
  ASSERT_TRUE((*det)->tick(DetectorTick{}).ok());
  auto s = (*det)->syncers();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[3].tid, 170);
}

TEST_F(TraceInstanceTest, StartFailsCleanlyWhenAnEventIsMissing) {
  FakeKernelTraceFs tfs(tracefs, {"syscalls/sys_enter_sync", "syscalls/sys_exit_sync"});
  auto o = opts();
  o.instanceName = "cxiosync-test";
  auto det = TraceDetector::start(tfs, *fs, o);
  ASSERT_FALSE(det.ok());
  EXPECT_NE(det.error().message.find("sys_enter_syncfs"), std::string::npos) << det.error().message;
  EXPECT_EQ(tfs.removed, (std::vector<std::string>{"cxiosync-test"}));
}

TEST_F(TraceInstanceTest, RemovesStaleInstancesOnly) {
  addThread(proc, 4000, 4000, "cxiosyncd", 'S', procSyscallLine(0), "/system.slice");
  addThread(proc, 4001, 4001, "bash", 'S', procSyscallLine(0), "/user.slice");
  for (const char* n : {"cxiosync-4000", "cxiosync-4001", "cxiosync-4999", "cxiosync-77",
                        "cxiosync-abc", "other-4999"}) {
    tracefs.dir(std::string("instances/") + n);
  }
  auto t = TraceFs::open(tracefs.root());
  ASSERT_TRUE(t.ok());
  auto removed = TraceDetector::removeStaleInstances(**t, *fs, 77);
  // 4000: a live cxiosync process; 4001: pid reused by bash; 4999: gone; 77: ourselves.
  EXPECT_EQ(removed, (std::vector<std::string>{"cxiosync-4001", "cxiosync-4999", "cxiosync-77"}));
  EXPECT_EQ(*(*t)->listInstances(),
            (std::vector<std::string>{"cxiosync-4000", "cxiosync-abc", "other-4999"}));
}

TEST_F(TraceInstanceTest, AutoFallsBackToProcfsWithAReason) {
  GlobalSettings g;
  auto c = makeDetector(g, nullptr, *fs);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, DetectorKind::Procfs);
  EXPECT_NE(c->reason.find("tracefs is not mounted"), std::string::npos) << c->reason;
  // A tracefs without the events (plain directory): auto falls back, tracefs fails.
  auto t = TraceFs::open(tracefs.root());
  ASSERT_TRUE(t.ok());
  c = makeDetector(g, t->get(), *fs);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, DetectorKind::Procfs);
  EXPECT_NE(c->reason.find("tracing_on"), std::string::npos) << c->reason;
  EXPECT_TRUE((*t)->listInstances()->empty());  // nothing left behind
  g.detector = DetectorKind::Tracefs;
  EXPECT_FALSE(makeDetector(g, t->get(), *fs).ok());
  g.detector = DetectorKind::Procfs;
  c = makeDetector(g, t->get(), *fs);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, DetectorKind::Procfs);
  EXPECT_EQ(c->detector->kind(), DetectorKind::Procfs);
}

TEST_F(TraceInstanceTest, AutoPicksTracefsWhenUsable) {
  FakeKernelTraceFs tfs(tracefs, TraceDetector::eventsFor(false));
  GlobalSettings g;
  auto c = makeDetector(g, &tfs, *fs);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->kind, DetectorKind::Tracefs);
  EXPECT_GE(c->detector->fd(), 0);
  EXPECT_NE(c->reason.find("cxiosync-" + std::to_string(::getpid())), std::string::npos)
      << c->reason;
}

}  // namespace
}  // namespace cxiosync
