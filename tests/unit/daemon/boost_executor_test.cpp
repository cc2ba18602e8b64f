// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/act/boost_executor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "daemon/kernel/cgroup_fs.h"
#include "test_util.h"

namespace cxiosync {
namespace {

using namespace cxiosync::testing;

constexpr uint64_t kMiB = 1048576;
const IoLimits kAllMax{kUnlimited, kUnlimited, kUnlimited, kUnlimited};

StartBoost boostOf(const char* holder, DevNum d, uint64_t wbps) {
  StartBoost s;
  s.cgroup = cg(holder);
  s.dirtier = cg(holder);
  s.device = d;
  s.original = IoMaxEntry{d, {kUnlimited, wbps, kUnlimited, kUnlimited}};
  s.boosted = IoMaxEntry{d, {std::nullopt, kUnlimited, std::nullopt, kUnlimited}};
  s.trigger.tid = 133;
  s.trigger.pid = 133;
  s.trigger.comm = "sync";
  s.trigger.cgroup = cg("/cg2");
  s.trigger.syscall = SyncSyscall::Sync;
  s.reason = "foreign sync waits on /cg1's writeback";
  return s;
}

RestoreBoost restoreOf(const char* holder, DevNum d) {
  RestoreBoost r;
  r.cgroup = cg(holder);
  r.device = d;
  r.why = EndReason::SyncersLeft;
  return r;
}

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io.add(cg("/cg1"), 23);
    io.set(cg("/cg1"), dev(254, 0), {std::nullopt, kMiB, std::nullopt, std::nullopt});
  }
  TimePoint t0 = TimePoint(std::chrono::seconds(1000));
  TempDir dir;
  FakeIoMax io;
  Journal journal{dir.path()};
};

TEST_F(ExecutorTest, JournalIsWrittenBeforeIoMax) {
  BoostExecutor ex(io, journal, false);
  bool checked = false;
  io.beforeWrite = [&] {
    if (checked) return;
    checked = true;
    auto loaded = Journal(dir.path()).load();
    ASSERT_TRUE(loaded);
    ASSERT_EQ(loaded->records.size(), 1u);
    EXPECT_EQ(loaded->records[0].boost.original.limits.wbps, kMiB);
    EXPECT_EQ(loaded->records[0].cgroupInode, 23u);
  };
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  EXPECT_TRUE(checked);
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)), kAllMax);
  ASSERT_EQ(ex.active().size(), 1u);
  EXPECT_EQ(ex.active()[0].boosted.limits, kAllMax);
  EXPECT_EQ(ex.active()[0].syncerTids, std::vector<int64_t>{133});
}

TEST_F(ExecutorTest, NoBoostWhenJournalCannotBeWritten) {
  Journal broken("/nonexistent/cxiosync-run");
  BoostExecutor ex(io, broken, false);
  EXPECT_FALSE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  EXPECT_EQ(io.writes, 0);
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)).wbps, kMiB);
  EXPECT_EQ(ex.activeCount(), 0u);
}

TEST_F(ExecutorTest, RestoreOursRestoresTheOriginal) {
  BoostExecutor ex(io, journal, false);
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  ASSERT_TRUE(ex.restore(restoreOf("/cg1", dev(254, 0)), t0 + std::chrono::seconds(2)));
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)), (IoLimits{kUnlimited, kMiB, kUnlimited, kUnlimited}));
  EXPECT_EQ(ex.activeCount(), 0u);
  auto loaded = journal.load();
  ASSERT_TRUE(loaded);
  EXPECT_TRUE(loaded->records.empty());
  EXPECT_DOUBLE_EQ(ex.stats().boostSecondsTotal, 2.0);
  EXPECT_EQ(ex.stats().endsByReason.at("syncers-left"), 1u);
  EXPECT_EQ(ex.stats().boostsBySyscall.at("sync"), 1u);
}

TEST_F(ExecutorTest, RestoreKeepsSomeoneElsesValueAndDropsTheRecord) {
  BoostExecutor ex(io, journal, false);
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  // systemd reload / an admin writes a new limit during the boost.
  io.set(cg("/cg1"), dev(254, 0), {std::nullopt, 5 * kMiB, std::nullopt, std::nullopt});
  int writesBefore = io.writes;
  ASSERT_TRUE(ex.restore(restoreOf("/cg1", dev(254, 0)), t0 + std::chrono::seconds(1)));
  EXPECT_EQ(io.writes, writesBefore);
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)).wbps, 5 * kMiB);
  EXPECT_EQ(ex.activeCount(), 0u);
  EXPECT_EQ(ex.stats().keptChanged, 1u);
  EXPECT_TRUE(journal.load()->records.empty());
}

TEST_F(ExecutorTest, VanishedCgroupDropsTheRecord) {
  BoostExecutor ex(io, journal, false);
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  io.cgroups.erase(cg("/cg1"));
  ASSERT_TRUE(ex.restore(restoreOf("/cg1", dev(254, 0)), t0));
  EXPECT_EQ(ex.activeCount(), 0u);
  EXPECT_TRUE(journal.load()->records.empty());
}

TEST_F(ExecutorTest, RecreatedCgroupIsNotGivenTheOldLimit) {
  BoostExecutor ex(io, journal, false);
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  io.cgroups.erase(cg("/cg1"));
  io.add(cg("/cg1"), 99);  // same name, new cgroup, unlimited
  ASSERT_TRUE(ex.restore(restoreOf("/cg1", dev(254, 0)), t0));
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)), kAllMax);
  EXPECT_EQ(ex.activeCount(), 0u);
}

TEST_F(ExecutorTest, FailedRestoreKeepsTheRecordForARetry) {
  BoostExecutor ex(io, journal, false);
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  io.failWritesWith = EIO;
  EXPECT_FALSE(ex.restore(restoreOf("/cg1", dev(254, 0)), t0));
  EXPECT_EQ(ex.activeCount(), 1u);
  EXPECT_EQ(journal.load()->records.size(), 1u);
  io.failWritesWith = 0;
  EXPECT_TRUE(ex.restore(restoreOf("/cg1", dev(254, 0)), t0));
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)).wbps, kMiB);
}

TEST_F(ExecutorTest, FailedBoostWriteLeavesNoRecord) {
  BoostExecutor ex(io, journal, false);
  io.failWritesWith = EINVAL;
  EXPECT_FALSE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  EXPECT_EQ(ex.activeCount(), 0u);
  EXPECT_TRUE(journal.load()->records.empty());
}

TEST_F(ExecutorTest, RefusesDoubleBoostsLoweringAndNoOps) {
  BoostExecutor ex(io, journal, false);
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  auto again = ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, EEXIST);

  io.add(cg("/cg3"), 30);
  io.set(cg("/cg3"), dev(8, 0), {std::nullopt, 10 * kMiB, std::nullopt, std::nullopt});
  StartBoost lower = boostOf("/cg3", dev(8, 0), 10 * kMiB);
  lower.boosted.limits = {std::nullopt, kMiB, std::nullopt, std::nullopt};
  EXPECT_FALSE(ex.start(lower, t0));
  EXPECT_EQ(io.get(cg("/cg3"), dev(8, 0)).wbps, 10 * kMiB);

  io.add(cg("/free"), 31);  // no limit at all: nothing to lift
  auto noop = ex.start(boostOf("/free", dev(8, 0), kMiB), t0);
  ASSERT_FALSE(noop);
  EXPECT_EQ(noop.error().code, EALREADY);
  EXPECT_EQ(ex.activeCount(), 1u);
}

// Kernel difference, by name: after the 6.10 blk-throttle rework io.max read back as zeros
// until commit 0a751df4566c. A zero read is never recorded as an original (nothing written,
// no record); a read-back after the write that differs is recorded as the boosted value, and
// the restore still writes the original read before the boost.
TEST_F(ExecutorTest, IoMaxZeroReadAfterBlkThrottleReworkIsNeverAnOriginal) {
  BoostExecutor ex(io, journal, false);
  io.set(cg("/cg1"), dev(254, 0), {0, 0, 0, 0});
  auto st = ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("zeros"), std::string::npos) << st.error().message;
  EXPECT_EQ(io.writes, 0);
  EXPECT_TRUE(ex.active().empty());
  EXPECT_EQ(ex.stats().failures, 1u);
}

TEST_F(ExecutorTest, IoMaxReadBackThatDiffersIsRecordedAsBoostedNotOriginal) {
  BoostExecutor ex(io, journal, false);
  // The write lands, but io.max then shows zeros for the keys not written (the post-6.10
  // display bug): the record keeps the original read before the write.
  io.beforeWrite = [&] {
    io.beforeWrite = nullptr;
    io.cgroups[cg("/cg1")].lines[dev(254, 0)] = IoLimits{0, 0, 0, 0};
  };
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  const IoLimits original{kUnlimited, kMiB, kUnlimited, kUnlimited};
  ASSERT_EQ(ex.active().size(), 1u);
  EXPECT_EQ(ex.active()[0].original.limits, original);
  EXPECT_NE(ex.active()[0].boosted.limits, original);
  auto loaded = journal.load();
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(loaded->records[0].boost.original.limits, original);
  ASSERT_TRUE(ex.restore(restoreOf("/cg1", dev(254, 0)), t0 + std::chrono::seconds(1)));
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)), original);
}

TEST_F(ExecutorTest, DryRunWritesNothing) {
  BoostExecutor ex(io, journal, true);
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  EXPECT_EQ(io.writes, 0);
  EXPECT_EQ(ex.activeCount(), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir.file("boosts.json")));
}

TEST_F(ExecutorTest, UpdateChangesTheSyncerSet) {
  BoostExecutor ex(io, journal, false);
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  ex.update(UpdateBoost{cg("/cg1"), dev(254, 0), {133, 150}});
  EXPECT_EQ(ex.active()[0].syncerTids, (std::vector<int64_t>{133, 150}));
  EXPECT_EQ(journal.load()->records[0].boost.syncerTids, (std::vector<int64_t>{133, 150}));
}

TEST_F(ExecutorTest, CrashRecoveryRestoresJournaledBoosts) {
  io.add(cg("/tenants"), 40);
  io.set(cg("/tenants"), dev(254, 0), {std::nullopt, 2 * kMiB, std::nullopt, 100});
  io.add(cg("/gone"), 41);
  io.set(cg("/gone"), dev(254, 0), {std::nullopt, kMiB, std::nullopt, std::nullopt});
  io.add(cg("/changed"), 42);
  io.set(cg("/changed"), dev(254, 0), {std::nullopt, kMiB, std::nullopt, std::nullopt});
  {
    BoostExecutor first(io, journal, false);
    ASSERT_TRUE(first.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
    ASSERT_TRUE(first.start(boostOf("/tenants", dev(254, 0), 2 * kMiB), t0));
    ASSERT_TRUE(first.start(boostOf("/gone", dev(254, 0), kMiB), t0));
    ASSERT_TRUE(first.start(boostOf("/changed", dev(254, 0), kMiB), t0));
    // "kill -9": the executor vanishes without restoring anything.
  }
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)), kAllMax);
  io.cgroups.erase(cg("/gone"));
  io.set(cg("/changed"), dev(254, 0), {std::nullopt, 7 * kMiB, std::nullopt, std::nullopt});

  BoostExecutor second(io, journal, false);
  auto summary = second.recover(t0 + std::chrono::seconds(5));
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->restored, 2u);
  EXPECT_EQ(summary->gone, 1u);
  EXPECT_EQ(summary->keptChanged, 1u);
  EXPECT_EQ(summary->failed, 0u);
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)), (IoLimits{kUnlimited, kMiB, kUnlimited, kUnlimited}));
  EXPECT_EQ(io.get(cg("/tenants"), dev(254, 0)), (IoLimits{kUnlimited, 2 * kMiB, kUnlimited, 100}));
  EXPECT_EQ(io.get(cg("/changed"), dev(254, 0)).wbps, 7 * kMiB);
  EXPECT_EQ(second.activeCount(), 0u);
  EXPECT_TRUE(journal.load()->records.empty());
}

TEST_F(ExecutorTest, RecoveryMovesACorruptJournalAsideAndCarriesOn) {
  writeFile(dir.file("boosts.json"), "{not json");
  BoostExecutor ex(io, journal, false);
  auto summary = ex.recover(t0);
  ASSERT_TRUE(summary);
  ASSERT_TRUE(summary->movedAside);
  EXPECT_TRUE(std::filesystem::exists(*summary->movedAside));
  EXPECT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
}

// A record that cannot be read may describe a boost still in force: its io.max holds a lifted
// value, and boosting again would journal that value as the "original".
TEST_F(ExecutorTest, AnUnreadableRecordHoldsItsCgroupBack) {
  io.add(cg("/cg2"), 24);
  io.set(cg("/cg2"), dev(254, 0), {std::nullopt, kUnlimited, std::nullopt, std::nullopt});
  io.add(cg("/cg3"), 25);
  io.set(cg("/cg3"), dev(254, 0), {std::nullopt, kMiB, std::nullopt, std::nullopt});
  writeFile(dir.file("boosts.json"),
            "{\"version\":1,\"boosts\":[\n"
            "{\"cgroup\":\"/cg2\",\"device\":\"254:0\",\"original\":{\"wbps\":1048576,"
            "\"wfuture\":1},\"boosted\":{\"wbps\":\"max\"},\"started_mono_usec\":1},\n"
            "{\"cgroup\":\"/gone\",\"device\":\"254:0\",\"original\":7}]}\n");
  BoostExecutor ex(io, journal, false);
  auto summary = ex.recover(t0);
  ASSERT_TRUE(summary);
  EXPECT_FALSE(summary->movedAside);
  EXPECT_EQ(summary->unreadable, 1u) << "the record of a cgroup that is gone is dropped";
  auto held = ex.start(boostOf("/cg2", dev(254, 0), kMiB), t0);
  ASSERT_FALSE(held);
  EXPECT_EQ(held.error().code, EBUSY);
  EXPECT_EQ(io.get(cg("/cg2"), dev(254, 0)).wbps, kUnlimited) << "io.max untouched";
  EXPECT_TRUE(ex.start(boostOf("/cg3", dev(254, 0), kMiB), t0)) << "other cgroups are boosted";
  auto loaded = Journal(dir.path()).load();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->records.size(), 1u);
  ASSERT_EQ(loaded->unreadable.size(), 1u) << "kept across rewrites";
  EXPECT_NE(loaded->unreadable[0].text.find("wfuture"), std::string::npos);
  EXPECT_EQ(loaded->unreadable[0].cgroup, cg("/cg2"));
  // And across a restart.
  Journal again(dir.path());
  BoostExecutor next(io, again, false);
  ASSERT_TRUE(next.recover(t0));
  EXPECT_FALSE(next.start(boostOf("/cg2", dev(254, 0), kMiB), t0));
}

TEST_F(ExecutorTest, AnUnreadableRecordWithoutACgroupHoldsEveryCgroup) {
  writeFile(dir.file("boosts.json"), "{\"version\":1,\"boosts\":[\n{\"cgro");
  BoostExecutor ex(io, journal, false);
  auto summary = ex.recover(t0);
  ASSERT_TRUE(summary);
  ASSERT_TRUE(summary->movedAside);
  EXPECT_EQ(summary->unreadable, 1u);
  auto held = ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0);
  ASSERT_FALSE(held);
  EXPECT_EQ(held.error().code, EBUSY);
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)).wbps, kMiB);
}

TEST_F(ExecutorTest, RecoveryRefusesWhenTheJournalCannotBeRead) {
  if (geteuid() == 0) {
    // root reads mode-000 files; use a directory in the journal's place instead.
    std::filesystem::create_directory(dir.file("boosts.json"));
  } else {
    writeFile(dir.file("boosts.json"), "{}");
    chmod(dir.file("boosts.json").c_str(), 0);
  }
  BoostExecutor ex(io, journal, false);
  EXPECT_FALSE(ex.recover(t0));
}

TEST_F(ExecutorTest, RestoreAllKeepsShutdownLifts) {
  io.add(cg("/cg2"), 50);
  io.set(cg("/cg2"), dev(254, 0), {std::nullopt, kMiB, std::nullopt, std::nullopt});
  BoostExecutor ex(io, journal, false);
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), kMiB), t0));
  StartBoost lift = boostOf("/cg2", dev(254, 0), kMiB);
  lift.shutdownLift = true;
  ASSERT_TRUE(ex.start(lift, t0));
  EXPECT_EQ(ex.restoreAll(EndReason::Shutdown, t0), 1u);
  EXPECT_EQ(io.get(cg("/cg1"), dev(254, 0)).wbps, kMiB);
  EXPECT_EQ(io.get(cg("/cg2"), dev(254, 0)).wbps, kUnlimited);
  auto loaded = journal.load();
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_TRUE(loaded->records[0].boost.shutdownLift);
}

// Through the real CgroupFs adapter over a fake tree (plain files named io.max).
TEST(ExecutorCgroupFsTest, BoostAndRestoreOnAFakeTree) {
  TempDir root;
  std::filesystem::create_directories(root.file("cg1"));
  // Kernel control files are written without O_TRUNC; a plain file keeps the tail of a
  // longer old content. wbps=100 and wbps=max have the same length, so the fake stays sane.
  writeFile(root.file("cg1/io.max"), "254:0 wbps=100\n");
  auto fs = CgroupFs::open(root.path());
  ASSERT_TRUE(fs) << fs.error().message;
  auto io = makeCgroupFsIoMax(*fs.value());
  TempDir run;
  Journal journal(run.path());
  BoostExecutor ex(*io, journal, false);
  TimePoint t0{};
  ASSERT_TRUE(ex.start(boostOf("/cg1", dev(254, 0), 100), t0));
  auto text = readFile(root.file("cg1/io.max"));
  EXPECT_NE(text.find("wbps=max"), std::string::npos) << text;
  auto loaded = journal.load();
  ASSERT_EQ(loaded->records.size(), 1u);
  struct stat st {};
  ASSERT_EQ(stat(root.file("cg1").c_str(), &st), 0);
  EXPECT_EQ(loaded->records[0].cgroupInode, st.st_ino);
  ASSERT_TRUE(ex.restore(restoreOf("/cg1", dev(254, 0)), t0));
  text = readFile(root.file("cg1/io.max"));
  EXPECT_EQ(text, "254:0 wbps=100\n");
  EXPECT_TRUE(journal.load()->records.empty());
}

TEST(LimitsTest, Helpers) {
  EXPECT_EQ(fullLimits(std::nullopt), kAllMax);
  IoLimits o{kUnlimited, kMiB, kUnlimited, kUnlimited};
  EXPECT_EQ(describeLimitChange(o, kAllMax), "wbps 1048576 -> max");
  EXPECT_EQ(formatLimit(kUnlimited), "max");
  EXPECT_EQ(overlayLimits(o, {std::nullopt, 5, std::nullopt, std::nullopt}).wbps, 5u);
}

}  // namespace
}  // namespace cxiosync
