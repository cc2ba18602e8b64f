// SPDX-License-Identifier: GPL-2.0-or-later
// Planner scenarios: one row per situation, each a short script of system changes and the
// exact decisions expected after every planner step (rendered compactly by world.h).
#include <gtest/gtest.h>

#include "tests/unit/planner/world.h"

namespace cxiosync::testing {
namespace {

using V = std::vector<std::string>;
#define STEP(...) EXPECT_EQ(w.step(), (V{__VA_ARGS__}))

// The seed picture of docs/architecture.md §1: cg1 limited to 1 MiB/s with 32 MiB dirty, cg2 free.
void seed(World& w) {
  w.limit("/cg1", "254:0", 1 * MiB);
  w.dirty("/cg1", 32 * MiB);
  w.addCgroup("/cg2");
}

struct Scenario {
  const char* name;
  void (*run)(World& w);
};

const Scenario kScenarios[] = {
    {"ForeignSyncBoostsThrottledDirtier",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       ASSERT_TRUE(w.lastStart());
       EXPECT_EQ(w.lastStart()->dirtier, cg("/cg1"));
       EXPECT_NE(w.lastStart()->reason.find("wbps 1048576 -> max"), std::string::npos);
       STEP();  // steady: nothing to do while the syncer waits
     }},
    {"NoSyncerNoDecision",
     [](World& w) {
       seed(w);
       STEP();
     }},
    {"SelfSyncIsRefused",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg1");
       STEP("refuse self-sync /cg1 254:0 tid=2");
       STEP();  // reported once per sync call
     }},
    {"SelfSyncFromDescendantIsRefused",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg1/job");
       STEP("refuse self-sync /cg1 254:0 tid=2");
     }},
    {"SiblingWithSharedPrefixIsForeign",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg10");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"RootSyncerIsForeignToEveryone",
     [](World& w) {
       seed(w);
       w.syncer(1, "/");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=1");
     }},
    {"AncestorLimitIsBoostedAtHolder",
     [](World& w) {
       w.limit("/tenants", "254:0", 1 * MiB);
       w.dirty("/tenants/cg1", 32 * MiB);
       w.dirty("/tenants", 32 * MiB);  // memory.stat is hierarchical
       w.syncer(2, "/cg2");
       STEP("start /tenants 254:0 wbps=max wiops=max tids=2");
       EXPECT_EQ(w.lastStart()->dirtier, cg("/tenants/cg1"));
       w.leave(2);
       STEP("restore /tenants 254:0 syncers-left");
     }},
    {"SyncInsideLimitedParentIsSelfSync",
     [](World& w) {
       w.limit("/tenants", "254:0", 1 * MiB);
       w.dirty("/tenants/cg1", 32 * MiB);
       w.syncer(2, "/tenants/cg2");
       STEP("refuse self-sync /tenants 254:0 tid=2");
     }},
    {"NestedLimitsBoostEveryLayerForUnlimitedSyncer",
     [](World& w) {
       w.limit("/tenants", "254:0", 10 * MiB);
       w.limit("/tenants/cg1", "254:0", 1 * MiB);
       w.dirty("/tenants/cg1", 32 * MiB);
       w.syncer(2, "/cg2");
       STEP("start /tenants 254:0 wbps=max wiops=max tids=2",
            "start /tenants/cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"NestedLimitsSiblingSyncerInheritsParentLimit",
     [](World& w) {
       w.limit("/tenants", "254:0", 10 * MiB);
       w.limit("/tenants/cg1", "254:0", 1 * MiB);
       w.dirty("/tenants/cg1", 32 * MiB);
       w.syncer(2, "/tenants/cg2");  // its own effective limit: the parent's 10 MiB/s
       STEP("start /tenants/cg1 254:0 wbps=10485760 wiops=max tids=2",
            "refuse self-sync /tenants 254:0 tid=2");
     }},
    {"LastSyncerLeavingRestores",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.advance(1);
       STEP();
       w.leave(2);
       STEP("restore /cg1 254:0 syncers-left");
       EXPECT_EQ(w.currentFull(cg("/cg1"), dev("254:0")).limits.wbps, 1 * MiB);
       STEP();
     }},
    {"OverlappingSyncersRestoreAfterLast",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.syncer(3, "/cg3");
       STEP("update /cg1 254:0 tids=2,3");
       w.leave(2);
       STEP("update /cg1 254:0 tids=3");
       w.leave(3);
       STEP("restore /cg1 254:0 syncers-left");
     }},
    {"SimultaneousSyncersShareOneBoost",
     [](World& w) {
       seed(w);
       w.syncer(3, "/cg3");
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2,3");
     }},
    {"BoostedToMaxLineVanishesButNewSyncersStillJoin",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       EXPECT_EQ(w.currentLine(cg("/cg1"), dev("254:0")), nullptr);  // all max: no line
       w.syncer(3, "/cg3");
       STEP("update /cg1 254:0 tids=2,3");
     }},
    {"IsolationOffIsRefusedOncePerSyncCall",
     [](World& w) {
       seed(w);
       w.limit("/cg3", "254:0", 1 * MiB);
       w.dirty("/cg3", 8 * MiB);
       w.policy("/user.slice").syncIsolation.value = false;
       w.syncer(2, "/user.slice/user-1000.slice");
       STEP("refuse isolation-off /cg1 254:0 tid=2");
       STEP();
       w.advance(1);
       w.again(2);  // a new sync call: said again
       STEP("refuse isolation-off /cg1 254:0 tid=2");
     }},
    {"BoostDenyOnHolderIsRefused",
     [](World& w) {
       seed(w);
       w.policy("/cg1").boost.value = BoostPermission::Deny;
       w.syncer(2, "/cg2");
       STEP("refuse boost-denied /cg1 254:0 tid=2");
       STEP();
     }},
    {"BoostDenyInheritedFromAncestor",
     [](World& w) {
       w.policy("/tenants").boost.value = BoostPermission::Deny;
       w.limit("/tenants/cg1", "254:0", 1 * MiB);
       w.dirty("/tenants/cg1", 32 * MiB);
       w.syncer(2, "/cg2");
       STEP("refuse boost-denied /tenants/cg1 254:0 tid=2");
     }},
    {"DenyDuringBoostRestoresAsPolicyChanged",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.policy("/cg1").boost.value = BoostPermission::Deny;
       STEP("restore /cg1 254:0 policy-changed");  // the restore line says why
       STEP("refuse boost-denied /cg1 254:0 tid=2");
     }},
    {"IsolationTurnedOffDuringBoostRestores",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.policy("/cg2").syncIsolation.value = false;
       STEP("restore /cg1 254:0 policy-changed", "refuse isolation-off /cg1 254:0 tid=2");
     }},
    {"SyncerMovedIntoLimitedSubtreeLeavesBoost",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.findSyncer(2)->cgroup = cg("/cg1/moved");
       STEP("restore /cg1 254:0 policy-changed", "refuse self-sync /cg1 254:0 tid=2");
     }},
    {"BelowMinDirtyIsNotADirtier",
     [](World& w) {
       w.limit("/cg1", "254:0", 1 * MiB);
       w.dirty("/cg1", 512 * 1024, 256 * 1024);
       w.syncer(2, "/cg2");
       STEP();
       w.dirty("/cg1", 512 * 1024, 512 * 1024);  // dirty + writeback reaches 1 MiB
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"UnlimitedDirtyCgroupIsNotADirtier",
     [](World& w) {
       w.dirty("/cg1", 64 * MiB);
       w.limit("/cg1", "254:0", std::nullopt, std::nullopt, 1 * MiB);  // read limit only
       w.syncer(2, "/cg2");
       STEP();
     }},
    {"TracefsWaitsOnNamesExactCgroups",
     [](World& w) {
       seed(w);
       w.limit("/cg3", "254:0", 1 * MiB);
       w.dirty("/cg3", 32 * MiB);
       w.syncer(2, "/cg2").waitsOn = {{w.inode("/cg3"), dev("254:0")}};
       STEP("start /cg3 254:0 wbps=max wiops=max tids=2");
     }},
    {"TracefsWritebackInFlightOfAnUnnamedLimitIsBoosted",
     [](World& w) {
       // cg1's pages went under writeback before the sync: writeback_queue names only wbs with
       // dirty inodes (here /cg3), but sync() still waits for cg1's writeback.
       w.limit("/cg1", "254:0", 1 * MiB);
       w.dirty("/cg1", 0, 4 * MiB);
       w.dirty("/cg3", 8 * MiB);
       w.syncer(2, "/cg2").waitsOn = {{w.inode("/cg3"), dev("254:0")}};
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"TracefsWaitsOnBelowMinDirtyIsRefused",
     [](World& w) {
       w.limit("/cg1", "254:0", 1 * MiB);
       w.dirty("/cg1", 4096);
       w.syncer(2, "/cg2").waitsOn = {{w.inode("/cg1"), dev("254:0")}};
       STEP("refuse below-min-dirty /cg1 254:0 tid=2");
     }},
    {"TracefsWaitsOnUnknownInodeIsIgnored",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2").waitsOn = {{999999, dev("254:0")}};
       STEP();
     }},
    {"TracefsWaitsOnFindsAncestorHolder",
     [](World& w) {
       w.limit("/tenants", "254:0", 1 * MiB);
       w.dirty("/tenants/cg1", 32 * MiB);
       w.syncer(2, "/cg2").waitsOn = {{w.inode("/tenants/cg1"), dev("254:0")}};
       STEP("start /tenants 254:0 wbps=max wiops=max tids=2");
     }},
    {"TracefsWaitsOnLoopBdiBoostsBackingLayer",
     [](World& w) {
       w.snap.devices.lower[dev("7:0")] = {dev("254:0")};
       seed(w);
       w.syncer(2, "/cg2").waitsOn = {{w.inode("/cg1"), dev("7:0")}};
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"InheritCeilingUsesSyncersOwnLimit",
     [](World& w) {
       seed(w);
       w.limit("/cg2", "254:0", 8 * MiB);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=8388608 wiops=max tids=2");
     }},
    {"CeilingNotHigherIsRefused",
     [](World& w) {
       seed(w);
       w.limit("/cg2", "254:0", 512 * 1024);
       w.syncer(2, "/cg2");
       STEP("refuse ceiling-not-higher /cg1 254:0 tid=2");
       EXPECT_NE(w.lastRefuse()->detail.find("524288"), std::string::npos);
     }},
    {"HighestCeilingAmongSimultaneousSyncersWins",
     [](World& w) {
       seed(w);
       w.limit("/cg2", "254:0", 8 * MiB);
       w.limit("/cg3", "254:0", 4 * MiB);
       w.syncer(2, "/cg2");
       w.syncer(3, "/cg3");
       STEP("start /cg1 254:0 wbps=8388608 wiops=max tids=2,3");
     }},
    {"BytesCeilingCapsBoostAndLiftsWiops",
     [](World& w) {
       w.limit("/cg1", "254:0", 1 * MiB, 100);
       w.dirty("/cg1", 32 * MiB);
       w.policy("/cg1").boostCeiling.value = BoostCeiling{BoostCeiling::Kind::Bytes, 50000000};
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=50000000 wiops=max tids=2");
     }},
    {"MaxCeilingLiftsIopsOnlyLimit",
     [](World& w) {
       w.limit("/cg1", "254:0", std::nullopt, 100);
       w.dirty("/cg1", 32 * MiB);
       w.policy("/cg1").boostCeiling.value = BoostCeiling{BoostCeiling::Kind::Max, 0};
       w.limit("/cg2", "254:0", 1 * MiB);  // ignored: ceiling is max, not inherit
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"InheritCeilingRaisesIopsToSyncersOwn",
     [](World& w) {
       w.limit("/cg1", "254:0", std::nullopt, 100);
       w.dirty("/cg1", 32 * MiB);
       w.limit("/cg2", "254:0", std::nullopt, 1000);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=1000 tids=2");
     }},
    {"ReadLimitsAreKeptWhenBoosting",
     [](World& w) {
       w.limit("/cg1", "254:0", 1 * MiB, std::nullopt, 5 * MiB);
       w.dirty("/cg1", 32 * MiB);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       EXPECT_EQ(w.lastStart()->boosted.limits.rbps, 5 * MiB);
       EXPECT_EQ(w.lastStart()->original.limits.rbps, 5 * MiB);
       EXPECT_EQ(w.lastStart()->original.limits.riops, kUnlimited);
     }},
    {"MaxBoostSecondsEndsAndSameCallIsNotReboosted",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       ASSERT_TRUE(w.last.nextWakeup);
       EXPECT_EQ(*w.last.nextWakeup, w.snap.now + std::chrono::seconds(30));
       w.advance(29.9);
       STEP();
       w.advance(0.1);
       STEP("restore /cg1 254:0 max-boost-time");
       w.advance(1);
       STEP();               // cooldown: the same sync call does not get it again
       w.syncer(3, "/cg3");  // a different syncer does
       STEP("start /cg1 254:0 wbps=max wiops=max tids=3");
     }},
    {"MaxBoostCooldownEndsWithNewSyncCall",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.advance(30);
       STEP("restore /cg1 254:0 max-boost-time");
       w.advance(1);
       w.again(2);
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"BudgetCapsSyncLoop",
     [](World& w) {
       seed(w);
       w.policy("/cg1").boostBudget.value = BoostBudget{10, std::chrono::seconds(100)};
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       for (int i = 0; i < 9; ++i) {
         w.advance(1);
         w.again(2);  // a sync loop: a new call every second
         STEP();
       }
       w.advance(1);  // 10 s boosted of the last 100 s: 10 % used up
       STEP("restore /cg1 254:0 budget-exhausted");
       w.advance(1);
       w.again(2);
       STEP("refuse budget-exhausted /cg1 254:0 tid=2");
       for (int i = 0; i < 50; ++i) {
         w.advance(1);
         w.again(2);
         w.step();
       }
       for (const auto& line : w.log) EXPECT_EQ(line.find("start"), line.rfind("start"));
       EXPECT_EQ(std::count_if(w.log.begin(), w.log.end(),
                               [](const std::string& l) { return l.starts_with("start"); }),
                 1);
     }},
    {"BudgetFreesAfterWindowSlides",
     [](World& w) {
       seed(w);
       w.policy("/cg1").boostBudget.value = BoostBudget{10, std::chrono::seconds(100)};
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.advance(10);
       STEP("restore /cg1 254:0 budget-exhausted");
       w.advance(1);
       w.again(2);
       STEP("refuse budget-exhausted /cg1 254:0 tid=2");
       ASSERT_TRUE(w.last.nextWakeup);
       // boosted [t0, t0+10]: 10 s of 10 % x 100 s; it frees when t0 leaves the window
       EXPECT_EQ(*w.last.nextWakeup, w.snap.now - std::chrono::seconds(11) +
                                         std::chrono::seconds(100) + std::chrono::nanoseconds(1));
       w.advance(95);  // the boosted interval [0, 10] has slid partly out of [6, 106]
       w.again(2);
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"BudgetIsPerHolderAcrossDevices",
     [](World& w) {
       seed(w);
       w.policy("/cg1").boostBudget.value = BoostBudget{10, std::chrono::seconds(100)};
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.advance(10);
       w.limit("/cg1", "8:0", 1 * MiB);  // a second device appears
       STEP("restore /cg1 254:0 budget-exhausted", "refuse budget-exhausted /cg1 8:0 tid=2");
     }},
    {"SyncBoostsEveryLimitedDevice",
     [](World& w) {
       seed(w);
       w.limit("/cg1", "8:0", 2 * MiB);
       w.syncer(2, "/cg2");
       STEP("start /cg1 8:0 wbps=max wiops=max tids=2",
            "start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"SyncfsBoostsOnlyItsDevice",
     [](World& w) {
       seed(w);
       w.limit("/cg1", "8:0", 2 * MiB);
       w.syncer(2, "/cg2", SyncSyscall::Syncfs, dev("8:0"));
       STEP("start /cg1 8:0 wbps=max wiops=max tids=2");
     }},
    {"SyncfsOnUnrelatedDeviceDoesNothing",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2", SyncSyscall::Syncfs, dev("8:0"));
       STEP();
     }},
    {"LoopDeviceBoostsBackingLayer",
     [](World& w) {
       w.snap.devices.lower[dev("7:0")] = {dev("254:0")};
       seed(w);
       w.syncer(2, "/cg2", SyncSyscall::Syncfs, dev("7:0"));
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"LoopDeviceBoostsEveryLayerWithALimit",
     [](World& w) {
       w.snap.devices.lower[dev("7:0")] = {dev("254:0")};
       seed(w);
       w.limit("/cg1", "7:0", 4 * MiB);
       w.syncer(2, "/cg2", SyncSyscall::Fsync, dev("7:0"));
       STEP("start /cg1 7:0 wbps=max wiops=max tids=2",
            "start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"DmDeviceFollowsItsSlaves",
     [](World& w) {
       w.snap.devices.lower[dev("253:0")] = {dev("8:0"), dev("8:16")};
       w.limit("/cg1", "8:16", 1 * MiB);
       w.limit("/cg1", "9:0", 1 * MiB);  // not below 253:0
       w.dirty("/cg1", 32 * MiB);
       w.syncer(2, "/cg2", SyncSyscall::Syncfs, dev("253:0"));
       STEP("start /cg1 8:16 wbps=max wiops=max tids=2");
     }},
    {"FsyncWithUnknownTargetIsTreatedLikeSync",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2", SyncSyscall::Fsync);
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
     }},
    {"DryRunRefusesWithDetail",
     [](World& w) {
       seed(w);
       w.settings.dryRun = true;
       w.syncer(2, "/cg2");
       STEP("refuse dry-run /cg1 254:0 tid=2");
       const Refuse* r = w.lastRefuse();
       ASSERT_TRUE(r);
       EXPECT_NE(r->detail.find("would boost"), std::string::npos) << r->detail;
       EXPECT_NE(r->detail.find("wbps 1048576 -> max"), std::string::npos) << r->detail;
       STEP();
       w.leave(2);
       STEP();
     }},
    {"ShutdownLiftsAll",
     [](World& w) {
       seed(w);
       w.limit("/cg3", "8:0", 2 * MiB, 50);
       w.limit("/cg4", "8:0", std::nullopt, std::nullopt, 1 * MiB);  // read-only limit: no
       w.shuttingDown = true;
       STEP("start /cg1 254:0 wbps=max wiops=max lift", "start /cg3 8:0 wbps=max wiops=max lift");
       w.advance(600);
       STEP();  // never restored by the planner
     }},
    {"ShutdownLiftRespectsDenyAndBytesCeiling",
     [](World& w) {
       seed(w);
       w.limit("/cg3", "8:0", 2 * MiB);
       w.policy("/cg3").boost.value = BoostPermission::Deny;
       w.policy("/cg1").boostCeiling.value = BoostCeiling{BoostCeiling::Kind::Bytes, 100 * MiB};
       w.shuttingDown = true;
       STEP("start /cg1 254:0 wbps=104857600 wiops=max lift", "refuse boost-denied /cg3 8:0 tid=0");
     }},
    {"ShutdownConvertsActiveBoostToLift",
     [](World& w) {
       seed(w);
       w.limit("/cg2", "254:0", 8 * MiB);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=8388608 wiops=max tids=2");
       w.shuttingDown = true;
       STEP("restore /cg1 254:0 shutdown", "start /cg2 254:0 wbps=max wiops=max lift");
       ASSERT_TRUE(w.last.nextWakeup);  // right away: the lift follows from the restored line
       EXPECT_EQ(*w.last.nextWakeup, w.snap.now + std::chrono::milliseconds(10));
       STEP("start /cg1 254:0 wbps=max wiops=max lift");
     }},
    {"ShutdownWithoutLiftPlansNormally",
     [](World& w) {
       seed(w);
       w.settings.liftOnShutdown = false;
       w.shuttingDown = true;
       STEP();
       w.syncer(1, "/");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=1");
     }},
    {"ShutdownDryRunOnlyRefuses",
     [](World& w) {
       seed(w);
       w.settings.dryRun = true;
       w.shuttingDown = true;
       STEP("refuse dry-run /cg1 254:0 tid=0");
       STEP();
     }},
    {"CgroupRemovedDuringBoostStillRestores",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.removeCgroup("/cg1");
       STEP("restore /cg1 254:0 cgroup-gone");
       STEP();
     }},
    {"OutsiderChangeStillRestoresCompareAndSwap",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.limit("/cg1", "254:0", 3 * MiB);  // systemd reload rewrote io.max meanwhile
       w.leave(2);
       STEP("restore /cg1 254:0 syncers-left");
       // The executor compares: io.max no longer holds what we wrote, theirs is kept.
       EXPECT_EQ(w.currentFull(cg("/cg1"), dev("254:0")).limits.wbps, 3 * MiB);
     }},
    {"RestoreGivesExactlyTheRecordedOriginal",
     [](World& w) {
       w.limit("/cg1", "254:0", 1 * MiB, 77, 5 * MiB);
       w.dirty("/cg1", 32 * MiB);
       const IoMaxEntry before = w.currentFull(cg("/cg1"), dev("254:0"));
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.leave(2);
       STEP("restore /cg1 254:0 syncers-left");
       const auto& r = std::get<RestoreBoost>(w.last.decisions.front());
       EXPECT_EQ(r.restoreTo, before);
       EXPECT_EQ(w.currentFull(cg("/cg1"), dev("254:0")), before);
     }},
    {"DirtyDroppingDuringBoostDoesNotEndIt",
     [](World& w) {
       seed(w);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.dirty("/cg1", 0);  // the boost is doing its job; the sync has not returned yet
       STEP();
       w.leave(2);
       STEP("restore /cg1 254:0 syncers-left");
     }},
    {"ShutdownLiftIsNeverTouchedAfterwards",
     [](World& w) {
       seed(w);
       w.shuttingDown = true;
       STEP("start /cg1 254:0 wbps=max wiops=max lift");
       w.shuttingDown = false;  // e.g. shutdown cancelled: still never restored by the planner
       w.syncer(2, "/cg2");
       STEP();
       w.leave(2);
       STEP();
       EXPECT_EQ(planRestoreAll(w.active, EndReason::Shutdown).size(), 0u);
     }},
    {"RestoreAllOnCleanStop",
     [](World& w) {
       seed(w);
       w.limit("/cg3", "8:0", 2 * MiB);
       w.dirty("/cg3", 8 * MiB);
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2",
            "start /cg3 8:0 wbps=max wiops=max tids=2");
       auto all = planRestoreAll(w.active, EndReason::Shutdown);
       ASSERT_EQ(all.size(), 2u);
       EXPECT_EQ(render(all[0]), "restore /cg1 254:0 shutdown");
       EXPECT_EQ(render(all[1]), "restore /cg3 8:0 shutdown");
     }},
    {"NextWakeupIsEarliestDeadline",
     [](World& w) {
       seed(w);
       w.policy("/cg1").boostBudget.value = BoostBudget{10, std::chrono::seconds(100)};
       w.syncer(2, "/cg2");
       STEP("start /cg1 254:0 wbps=max wiops=max tids=2");
       w.advance(2);
       STEP();
       ASSERT_TRUE(w.last.nextWakeup);  // budget: 10 s allowed, 2 s used -> 8 s left
       EXPECT_EQ(*w.last.nextWakeup, w.snap.now + std::chrono::seconds(8));
       w.leave(2);
       STEP("restore /cg1 254:0 syncers-left");
       EXPECT_FALSE(w.last.nextWakeup);
     }},
};

class PlannerScenario : public ::testing::TestWithParam<Scenario> {};

TEST_P(PlannerScenario, Runs) {
  World w;
  GetParam().run(w);
}

INSTANTIATE_TEST_SUITE_P(Planner, PlannerScenario, ::testing::ValuesIn(kScenarios),
                         [](const ::testing::TestParamInfo<Scenario>& p) {
                           return std::string(p.param.name);
                         });

TEST(PlannerScenarios, AtLeastThirty) {
  EXPECT_GE(std::size(kScenarios), 30u);
}

}  // namespace
}  // namespace cxiosync::testing
