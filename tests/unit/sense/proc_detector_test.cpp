// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sense/proc_detector.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "tests/unit/sense/fake_tree.h"

namespace cxiosync {
namespace {

using testing::addThread;
using testing::FakeTree;
using testing::procSyscallLine;

const SyscallTable& x86 = kSyscallsX86_64;

class ProcDetectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // pid 100: main thread sleeping in read(2), thread 101 inside sync() in state D.
    addThread(proc, 100, 100, "backup", 'S', procSyscallLine(0), "/cg2");
    addThread(proc, 100, 101, "backup-worker", 'D', procSyscallLine(162), "/cg2");
    // pid 200: running, "running" syscall file.
    addThread(proc, 200, 200, "busy", 'R', "running\n", "/user.slice");
    // pid 300: fsync(3) in D (only with watch_fsync); fd 3 is a file in the fake tree.
    addThread(proc, 300, 300, "postgres", 'D', procSyscallLine(74, 3), "/db.slice/pg");
    proc.file("data/file", "x");
    proc.symlink(proc.path("data/file"), "300/fd/3");
    // pid 400: syncfs(5) from inside the limited cgroup.
    addThread(proc, 400, 400, "syncfs", 'D', procSyscallLine(306, 5), "/cg1");
    proc.symlink(proc.path("data/file"), "400/fd/5");
    // pid 500: msync(MS_ASYNC=1) in D: never waits for writeback, not a syncer.
    addThread(proc, 500, 500, "mapper", 'D', procSyscallLine(26, 0, 1), "/cg2");
    // pid 600: blocked in D outside a syscall (page fault).
    addThread(proc, 600, 600, "faulting", 'D', "-1 0x7ffd0000 0x7f000000\n", "/cg2");
    // kernel thread-like entry without task/ (e.g. a pid that vanished): skipped.
    proc.file("700/stat", testing::procStatLine(700, "gone", 'D', 1));
    proc.file("self/whatever", "");
    auto p = ProcFs::open(proc.root());
    ASSERT_TRUE(p.ok());
    fs = std::move(*p);
  }
  DevNum fileDev() {
    struct stat st {};
    ::stat(proc.path("data/file").c_str(), &st);
    return DevNum{::major(st.st_dev), ::minor(st.st_dev)};
  }
  FakeTree proc;
  std::unique_ptr<ProcFs> fs;
};

TEST_F(ProcDetectorTest, FindsSyncAndSyncfsInStateD) {
  ProcDetector det(*fs, ProcDetectorOptions{false, &x86, true});
  ASSERT_TRUE(det.scan(true).ok());
  auto s = det.syncers();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].tid, 101);
  EXPECT_EQ(s[0].pid, 100);
  EXPECT_EQ(s[0].comm, "backup-worker");
  EXPECT_EQ(s[0].cgroup.display(), "/cg2");
  EXPECT_EQ(s[0].syscall, SyncSyscall::Sync);
  EXPECT_FALSE(s[0].targetDevice.has_value());
  EXPECT_EQ(s[1].tid, 400);
  EXPECT_EQ(s[1].syscall, SyncSyscall::Syncfs);
  EXPECT_EQ(s[1].cgroup.display(), "/cg1");
  ASSERT_TRUE(s[1].targetDevice.has_value());
  EXPECT_EQ(*s[1].targetDevice, fileDev());
  EXPECT_TRUE(det.changed());
  EXPECT_FALSE(det.changed());
  EXPECT_EQ(det.lastScan().threads, 7u);
  EXPECT_EQ(det.lastScan().syscallReads, 5u);  // D-state threads only
}

TEST_F(ProcDetectorTest, FsyncFamilyOnlyWithWatchFsync) {
  ProcDetector det(*fs, ProcDetectorOptions{true, &x86, true});
  ASSERT_TRUE(det.scan(true).ok());
  auto s = det.syncers();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].tid, 300);
  EXPECT_EQ(s[1].syscall, SyncSyscall::Fsync);
  EXPECT_EQ(s[1].targetDevice, std::optional<DevNum>(fileDev()));
  // msync with MS_SYNC does count.
  addThread(proc, 500, 500, "mapper", 'D', procSyscallLine(26, 0, 4), "/cg2");
  ASSERT_TRUE(det.scan(true).ok());
  EXPECT_EQ(det.syncers().size(), 4u);
}

TEST_F(ProcDetectorTest, NothingCanMatterMeansNoWork) {
  ProcDetector det(*fs, ProcDetectorOptions{false, &x86, true});
  ASSERT_TRUE(det.scan(false).ok());
  EXPECT_TRUE(det.lastScan().skipped);
  EXPECT_EQ(det.lastScan().threads, 0u);
  EXPECT_TRUE(det.syncers().empty());
  EXPECT_FALSE(det.changed());
  // Known syncers are followed until they leave, gate or not (syncer_invariant_test.cpp).
  ASSERT_TRUE(det.scan(true).ok());
  ASSERT_EQ(det.syncers().size(), 2u);
  (void)det.changed();
  ASSERT_TRUE(det.scan(false).ok());
  EXPECT_FALSE(det.lastScan().skipped);
  EXPECT_EQ(det.syncers().size(), 2u);
  EXPECT_FALSE(det.changed());
}

TEST_F(ProcDetectorTest, KeepsSinceAcrossScansAndSeesExitAndReuse) {
  ProcDetector det(*fs, ProcDetectorOptions{false, &x86, true});
  ASSERT_TRUE(det.scan(true).ok());
  const auto since = det.syncers()[0].since;
  (void)det.changed();
  ASSERT_TRUE(det.scan(true).ok());
  EXPECT_EQ(det.syncers()[0].since, since);
  EXPECT_FALSE(det.changed());
  // Thread 101 leaves sync (back to S).
  addThread(proc, 100, 101, "backup-worker", 'S', procSyscallLine(0), "/cg2");
  ASSERT_TRUE(det.scan(true).ok());
  EXPECT_EQ(det.syncers().size(), 1u);
  EXPECT_TRUE(det.changed());
  // Process 400 dies; its pid is reused by a new syncfs caller (different start time).
  addThread(proc, 400, 400, "other", 'D', procSyscallLine(306, 5), "/cg2", 5000);
  ASSERT_TRUE(det.scan(true).ok());
  ASSERT_EQ(det.syncers().size(), 1u);
  EXPECT_EQ(det.syncers()[0].comm, "other");
  EXPECT_EQ(det.syncers()[0].cgroup.display(), "/cg2");
  EXPECT_TRUE(det.changed());
  proc.remove("400");
  ASSERT_TRUE(det.scan(true).ok());
  EXPECT_TRUE(det.syncers().empty());
}

TEST_F(ProcDetectorTest, GenericSyscallTable) {
  FakeTree arm;
  addThread(arm, 10, 10, "sync", 'D', procSyscallLine(81), "/cg2");
  addThread(arm, 11, 11, "syncfs", 'D', procSyscallLine(267, 3), "/cg2");
  addThread(arm, 12, 12, "x86sync", 'D', procSyscallLine(162), "/cg2");
  auto p = ProcFs::open(arm.root());
  ASSERT_TRUE(p.ok());
  ProcDetector det(**p, ProcDetectorOptions{false, &kSyscallsGeneric, true});
  ASSERT_TRUE(det.scan(true).ok());
  auto s = det.syncers();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].syscall, SyncSyscall::Sync);
  EXPECT_EQ(s[1].syscall, SyncSyscall::Syncfs);
  EXPECT_FALSE(s[1].targetDevice.has_value());  // fd 3 not open in the fake
}

TEST(SyscallTables, NumbersAndNames) {
  EXPECT_EQ(kSyscallsX86_64.lookup(162), std::optional<SyncSyscall>(SyncSyscall::Sync));
  EXPECT_EQ(kSyscallsX86_64.lookup(306), std::optional<SyncSyscall>(SyncSyscall::Syncfs));
  EXPECT_EQ(kSyscallsX86_64.lookup(277), std::optional<SyncSyscall>(SyncSyscall::SyncFileRange));
  EXPECT_EQ(kSyscallsX86_64.lookup(26), std::optional<SyncSyscall>(SyncSyscall::Msync));
  EXPECT_FALSE(kSyscallsX86_64.lookup(-1).has_value());
  EXPECT_FALSE(kSyscallsX86_64.lookup(0).has_value());
  EXPECT_EQ(kSyscallsGeneric.numberOf(SyncSyscall::Msync), 227);
  EXPECT_EQ(kSyscallsGeneric.numberOf(SyncSyscall::Fdatasync), 83);
  EXPECT_EQ(syncSyscallFromText("sync_file_range"),
            std::optional<SyncSyscall>(SyncSyscall::SyncFileRange));
  EXPECT_FALSE(syncSyscallFromText("read").has_value());
  EXPECT_STREQ(hostSyscallTable().arch, "x86_64");
}

TEST(ProcFsStatus, ParsesTgid) {
  EXPECT_EQ(*parseStatusTgid("Name:\tx\nUmask:\t0022\nState:\tS\nTgid:\t4242\nNgid:\t0\n"), 4242);
  EXPECT_FALSE(parseStatusTgid("Name:\tx\n").ok());
}

}  // namespace
}  // namespace cxiosync

namespace cxiosync {
namespace {

TEST(ProcStatFields, StateAndNumThreads) {
  std::string line = testing::procStatLine(42, "a) (b", 'D', 7);
  EXPECT_EQ(statStateOf(line), 'D');
  EXPECT_EQ(statNumThreads(line), 0);
  // Field 20 (num_threads) = 1: the single-threaded fast path needs no task/ directory.
  std::string one = "42 (x y) D 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 999 0 0\n";
  EXPECT_EQ(statNumThreads(one), 1);
  EXPECT_EQ(statStateOf("garbage"), '?');
}

TEST(ProcDetectorFastPath, SingleThreadedProcessWithoutTaskDir) {
  testing::FakeTree proc;
  proc.file("42/stat", "42 (sync) D 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 999 0 0\n");
  proc.file("42/task/42/syscall", testing::procSyscallLine(162));
  proc.file("42/task/42/cgroup", "0::/cg2\n");
  auto p = ProcFs::open(proc.root());
  ASSERT_TRUE(p.ok());
  ProcDetector det(**p, ProcDetectorOptions{false, &kSyscallsX86_64, true});
  ASSERT_TRUE(det.scan(true).ok());
  ASSERT_EQ(det.syncers().size(), 1u);
  EXPECT_EQ(det.syncers()[0].tid, 42);
  EXPECT_EQ(det.lastScan().threads, 1u);
}

}  // namespace
}  // namespace cxiosync

namespace cxiosync {
namespace {

TEST(ProcDetectorFastPath, StatFilesStayOpenBetweenScansAndCloseWhenGone) {
  testing::FakeTree proc;
  testing::addThread(proc, 100, 100, "a", 'S', testing::procSyscallLine(0), "/x");
  testing::addThread(proc, 100, 101, "b", 'S', testing::procSyscallLine(0), "/x");
  testing::addThread(proc, 200, 200, "c", 'S', testing::procSyscallLine(0), "/x");
  auto p = ProcFs::open(proc.root());
  ASSERT_TRUE(p.ok());
  ProcDetector det(**p, ProcDetectorOptions{false, &kSyscallsX86_64, true});
  ASSERT_TRUE(det.scan(true).ok());
  const size_t open1 = (*p)->statFdCacheSize();
  EXPECT_GE(open1, 5u);  // 100, 101, 200 (process level) + task 100, 101, 200
  // The content of an open stat file is re-read on every pass.
  testing::addThread(proc, 100, 101, "b", 'D', testing::procSyscallLine(162), "/x");
  ASSERT_TRUE(det.scan(true).ok());
  ASSERT_EQ(det.syncers().size(), 1u);
  EXPECT_EQ((*p)->statFdCacheSize(), open1);
  proc.remove("200");
  ASSERT_TRUE(det.scan(true).ok());
  EXPECT_LT((*p)->statFdCacheSize(), open1);
}

}  // namespace
}  // namespace cxiosync
