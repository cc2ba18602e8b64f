// SPDX-License-Identifier: GPL-2.0-or-later
// Issue 25: whose sync it is. A sync by the owner of the dirtier's tenant (its uid) is a
// self-sync wherever it runs (a cron job, a session scope); budgets are kept per (limit's
// account, syncing party), so one party's sync loop cannot spend the share another party's
// syncs rely on; root's syncs from a login session are isolated by default
// (docs/policy-semantics.md §5). Only decisions are asserted here, so the file also builds
// against the planner before issue 25 (which fails these scenarios).
#include <gtest/gtest.h>

#include "tests/unit/planner/world.h"

namespace cxiosync::testing {
namespace {

using V = std::vector<std::string>;
#define STEP(...) EXPECT_EQ(w.step(), (V{__VA_ARGS__}))

constexpr const char* kSlice = "/user.slice/user-1000.slice";
constexpr const char* kManager = "/user.slice/user-1000.slice/user@1000.service";
const std::string kHeavy = std::string(kManager) + "/app.slice/heavy.service";

// The shipped tenants of user 1000 (user-1000.slice and its manager), the manager's app
// throttled to 1 MiB/s with 32 MiB dirty.
void seedUser(World& w) {
  w.tenant(kSlice);
  w.tenant(kManager);
  w.limit(kHeavy, "254:0", 1 * MiB);
  w.dirty(kHeavy, 32 * MiB);
}

Syncer& syncerAs(World& w, int64_t tid, std::string_view cgroup, uint32_t euid) {
  Syncer& s = w.syncer(tid, cgroup);
  s.euid = euid;
  return s;
}

TEST(PlannerOwner, CronJobOfTheOwnerIsASelfSync) {
  World w;
  seedUser(w);
  syncerAs(w, 7, "/system.slice/cron.service", 1000);
  STEP("refuse self-sync " + kHeavy + " 254:0 tid=7");
  ASSERT_TRUE(w.lastRefuse());
  const std::string& detail = w.lastRefuse()->detail;
  EXPECT_NE(detail.find("runs as uid 1000, the owner of the dirtier " + kHeavy + "'s tenant " +
                        std::string(kManager)),
            std::string::npos)
      << detail;
  for (int i = 0; i < 50; ++i) {  // the loop of syncs never lifts the limit
    w.advance(0.5);
    w.again(7);
    STEP("refuse self-sync " + kHeavy + " 254:0 tid=7");
  }
  EXPECT_TRUE(w.active.empty());
  EXPECT_EQ(w.currentFull(cg(kHeavy), dev("254:0")).limits.wbps, 1 * MiB);
}

TEST(PlannerOwner, SessionScopeOfTheOwnerIsASelfSync) {
  World w;
  seedUser(w);
  // The session scope is in the slice's tenant, not the manager's: the uid makes it a self-sync.
  syncerAs(w, 8, std::string(kSlice) + "/session-3.scope", 1000);
  STEP("refuse self-sync " + kHeavy + " 254:0 tid=8");
}

TEST(PlannerOwner, RootsSyncIsForeign) {
  World w;
  seedUser(w);
  syncerAs(w, 9, "/system.slice/apt.service", 0);
  STEP("start " + kHeavy + " 254:0 wbps=max wiops=max tids=9");
}

TEST(PlannerOwner, SudoFromTheUsersSessionIsForeign) {
  World w;
  seedUser(w);
  syncerAs(w, 9, std::string(kSlice) + "/session-3.scope", 0);
  STEP("start " + kHeavy + " 254:0 wbps=max wiops=max tids=9");
}

TEST(PlannerOwner, AnotherUsersSyncIsForeign) {
  World w;
  seedUser(w);
  syncerAs(w, 10, "/system.slice/cron.service", 1001);
  STEP("start " + kHeavy + " 254:0 wbps=max wiops=max tids=10");
}

TEST(PlannerOwner, UnknownUidIsForeign) {
  World w;
  seedUser(w);
  w.syncer(11, "/system.slice/cron.service");  // /proc/TID/status could not be read
  STEP("start " + kHeavy + " 254:0 wbps=max wiops=max tids=11");
}

// A delegated subtree (Delegate=yes, User=ci): its owner is the uid owning the tenant root's
// cgroup directory.
TEST(PlannerOwner, DelegatedTenantBelongsToTheDirectoryOwner) {
  World w;
  w.tenant("/system.slice/ci.service");
  w.addCgroup("/system.slice/ci.service").ownerUid = 2000;
  w.limit("/system.slice/ci.service/job", "254:0", 1 * MiB);
  w.dirty("/system.slice/ci.service/job", 32 * MiB);
  syncerAs(w, 2, "/system.slice/cron.service", 2000);
  STEP("refuse self-sync /system.slice/ci.service/job 254:0 tid=2");
  syncerAs(w, 3, "/system.slice/cron.service", 2001);
  STEP("start /system.slice/ci.service/job 254:0 wbps=max wiops=max tids=3");
}

// Root owns every cgroup nobody delegated: a root-owned tenant names no owner, and root's syncs
// stay foreign to it.
TEST(PlannerOwner, RootOwnedTenantHasNoOwner) {
  World w;
  w.tenant("/machine.slice/box.scope");
  w.addCgroup("/machine.slice/box.scope").ownerUid = 0;
  w.limit("/machine.slice/box.scope/app", "254:0", 1 * MiB);
  w.dirty("/machine.slice/box.scope/app", 32 * MiB);
  syncerAs(w, 2, "/system.slice/backup.service", 0);
  STEP("start /machine.slice/box.scope/app 254:0 wbps=max wiops=max tids=2");
}

TEST(PlannerOwner, TenantSyncForeignTurnsTheOwnerRuleOff) {
  World w;
  seedUser(w);
  w.policy(kManager).tenantSync.value = TenantSync::Foreign;
  syncerAs(w, 7, "/system.slice/cron.service", 1000);
  STEP("start " + kHeavy + " 254:0 wbps=max wiops=max tids=7");
}

// The quick start (docs/user-guide.md §3): an admin's `time sync` in an ssh session, whose
// scope is below /user.slice, where sync_isolation is off by default.
TEST(PlannerRootIsolation, RootsSessionSyncIsIsolatedByDefault) {
  World w;
  w.policy("/user.slice").syncIsolation.value = false;  // the built-in default, source default
  w.limit("/backup.slice", "8:0", 10'000'000);
  w.dirty("/backup.slice", 400 * MiB);
  syncerAs(w, 5, "/user.slice/user-0.slice/session-1.scope", 0);
  STEP("start /backup.slice 8:0 wbps=max wiops=max tids=5");
}

TEST(PlannerRootIsolation, AnUnprivilegedSessionStaysAsConfigured) {
  World w;
  w.policy("/user.slice").syncIsolation.value = false;
  w.limit("/backup.slice", "8:0", 10'000'000);
  w.dirty("/backup.slice", 400 * MiB);
  syncerAs(w, 5, "/user.slice/user-1000.slice/session-2.scope", 1000);
  STEP("refuse isolation-off /backup.slice 8:0 tid=5");
}

TEST(PlannerRootIsolation, AStatedOffIsKept) {
  World w;
  auto& p = w.policy("/user.slice");
  p.syncIsolation.value = false;
  p.syncIsolation.source = ValueSource::yaml("/etc/cxiosync/cxiosync.yaml", 4);
  w.limit("/backup.slice", "8:0", 10'000'000);
  w.dirty("/backup.slice", 400 * MiB);
  syncerAs(w, 5, "/user.slice/user-0.slice/session-1.scope", 0);
  STEP("refuse isolation-off /backup.slice 8:0 tid=5");
}

TEST(PlannerRootIsolation, RootInAContainerSliceStaysAsConfigured) {
  World w;
  w.policy("/machine.slice").syncIsolation.value = false;
  w.limit("/backup.slice", "8:0", 10'000'000);
  w.dirty("/backup.slice", 400 * MiB);
  syncerAs(w, 5, "/machine.slice/ctr.scope", 0);
  STEP("refuse isolation-off /backup.slice 8:0 tid=5");
}

// /backup.slice may be boosted 25% of 120 s = 30 s for each syncing party.
void seedBackup(World& w) {
  auto& p = w.policy("/");
  p.boostBudget.value = BoostBudget{25, std::chrono::seconds(120)};
  p.maxBoost.value = std::chrono::seconds(0);  // no per-episode cap: the budget alone
  w.limit("/backup.slice", "254:0", 1 * MiB);
  w.dirty("/backup.slice", 64 * MiB);
}

// User 1000's cron job loops on sync(): it spends its own share only; root's sync afterwards
// is still boosted.
TEST(PlannerBudgetShare, AUsersSyncLoopDrainsOnlyItsOwnShare) {
  World w;
  seedBackup(w);
  syncerAs(w, 7, "/system.slice/cron.service", 1000);
  STEP("start /backup.slice 254:0 wbps=max wiops=max tids=7");
  for (int i = 0; i < 60; ++i) {  // 30 s of sync calls, one every 0.5 s
    w.advance(0.5);
    w.again(7);
    w.step();
  }
  w.advance(0.5);
  w.again(7);
  STEP("refuse budget-exhausted /backup.slice 254:0 tid=7");
  ASSERT_TRUE(w.lastRefuse());
  EXPECT_NE(w.lastRefuse()->detail.find("for syncs of uid 1000"), std::string::npos)
      << w.lastRefuse()->detail;
  EXPECT_NE(std::find(w.log.begin(), w.log.end(), "restore /backup.slice 254:0 budget-exhausted"),
            w.log.end());
  EXPECT_TRUE(w.active.empty());
  // The loop goes on; root's apt (outside any tenant: the system's share) is boosted.
  w.advance(0.5);
  w.again(7);
  syncerAs(w, 1, "/system.slice/apt.service", 0);
  STEP("start /backup.slice 254:0 wbps=max wiops=max tids=1",
       "refuse budget-exhausted /backup.slice 254:0 tid=7");
  // The user's loop cannot join root's boost either, and cannot keep it up: when root leaves,
  // it ends.
  for (int i = 0; i < 4; ++i) {
    w.advance(0.5);
    w.again(7);
    STEP("refuse budget-exhausted /backup.slice 254:0 tid=7");
  }
  w.leave(1);
  w.advance(0.5);
  w.again(7);
  STEP("restore /backup.slice 254:0 syncers-left",
       "refuse budget-exhausted /backup.slice 254:0 tid=7");
}

// The same from a user's tenant (user@1001.service), and a tenant's share is not root's: root's
// sync joins the tenant's boost, the tenant's share runs out, the boost stays for root.
TEST(PlannerBudgetShare, ATenantsShareRunsOutWhileRootsSyncKeepsTheBoost) {
  World w;
  seedBackup(w);
  const std::string user = "/user.slice/user-1001.slice/user@1001.service";
  w.tenant(user);
  syncerAs(w, 7, user + "/app.slice/loop.service", 1001);
  STEP("start /backup.slice 254:0 wbps=max wiops=max tids=7");
  w.advance(20);
  syncerAs(w, 1, "/system.slice/apt.service", 0);
  STEP("update /backup.slice 254:0 tids=1,7");
  w.advance(10.5);  // the tenant: 30.5 s; root: 10.5 s since it joined
  STEP("update /backup.slice 254:0 tids=1", "refuse budget-exhausted /backup.slice 254:0 tid=7");
  ASSERT_TRUE(w.lastRefuse());
  EXPECT_NE(w.lastRefuse()->detail.find("for syncs of tenant " + user), std::string::npos)
      << w.lastRefuse()->detail;
  w.advance(15);  // root: 25.5 s of its 30 s
  STEP();
  w.advance(5);  // root: 30.5 s
  STEP("restore /backup.slice 254:0 budget-exhausted");
}

// Two users' loops: each is bounded by its own share, neither by the other's.
TEST(PlannerBudgetShare, EachUsersLoopIsBoundedByItsOwnShare) {
  World w;
  seedBackup(w);
  syncerAs(w, 7, "/system.slice/cron.service", 1000);
  STEP("start /backup.slice 254:0 wbps=max wiops=max tids=7");
  w.advance(30.5);
  w.again(7);
  STEP("restore /backup.slice 254:0 budget-exhausted");
  w.advance(0.5);
  syncerAs(w, 8, "/system.slice/cron.service", 1001);
  w.again(7);
  STEP("start /backup.slice 254:0 wbps=max wiops=max tids=8",
       "refuse budget-exhausted /backup.slice 254:0 tid=7");
  w.advance(30.5);
  w.again(8);
  w.again(7);
  STEP("restore /backup.slice 254:0 budget-exhausted",
       "refuse budget-exhausted /backup.slice 254:0 tid=7");
}

}  // namespace
}  // namespace cxiosync::testing
