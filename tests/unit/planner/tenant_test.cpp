// SPDX-License-Identifier: GPL-2.0-or-later
// Tenants (issue 15, docs/policy-semantics.md "Tenants"): a sync from inside the dirtier's own
// tenant is a self-sync unless the tenant says tenant_sync: foreign, and boost budgets are
// kept per tenant, not per limited cgroup.
#include <gtest/gtest.h>

#include "tests/unit/planner/world.h"

namespace cxiosync::testing {
namespace {

using V = std::vector<std::string>;
#define STEP(...) EXPECT_EQ(w.step(), (V{__VA_ARGS__}))

constexpr const char* kUser = "/user.slice/user-1000.slice/user@1000.service";

// User 1000's throttled app and a cron-like sibling it also owns.
void seedTenant(World& w) {
  w.tenant(kUser);
  w.limit(std::string(kUser) + "/app.slice/heavy.service", "254:0", 1 * MiB);
  w.dirty(std::string(kUser) + "/app.slice/heavy.service", 32 * MiB);
  w.addCgroup(std::string(kUser) + "/app.slice/cron.service");
}

TEST(PlannerTenant, SameTenantSiblingSyncLoopCannotLiftTheLimit) {
  World w;
  seedTenant(w);
  const std::string heavy = std::string(kUser) + "/app.slice/heavy.service";
  w.syncer(7, std::string(kUser) + "/app.slice/cron.service");
  STEP("refuse self-sync " + heavy + " 254:0 tid=7");
  ASSERT_TRUE(w.lastRefuse());
  const std::string& detail = w.lastRefuse()->detail;
  EXPECT_NE(detail.find("are in one tenant, " + std::string(kUser)), std::string::npos) << detail;
  EXPECT_NE(detail.find("tenant_sync self"), std::string::npos) << detail;
  EXPECT_NE(detail.find("self-sync"), std::string::npos) << detail;
  // The loop: every new sync call is refused again, the limit never moves.
  for (int i = 0; i < 50; ++i) {
    w.advance(0.2);
    w.again(7);
    STEP("refuse self-sync " + heavy + " 254:0 tid=7");
  }
  EXPECT_TRUE(w.active.empty());
  EXPECT_EQ(w.currentFull(cg(heavy), dev("254:0")).limits.wbps, 1 * MiB);
  EXPECT_TRUE(w.planner.state().usage.empty());
}

TEST(PlannerTenant, AnotherTenantCanLiftTheLimit) {
  World w;
  seedTenant(w);
  w.tenant("/user.slice/user-1001.slice/user@1001.service");
  w.syncer(8, "/user.slice/user-1001.slice/user@1001.service/app.slice/backup.service");
  STEP("start " + std::string(kUser) + "/app.slice/heavy.service 254:0 wbps=max wiops=max tids=8");
}

TEST(PlannerTenant, SyncerInNoTenantIsForeign) {
  World w;
  seedTenant(w);
  w.syncer(9, "/system.slice/backup.service");
  STEP("start " + std::string(kUser) + "/app.slice/heavy.service 254:0 wbps=max wiops=max tids=9");
}

TEST(PlannerTenant, TenantSyncForeignBoostsSiblings) {
  World w;
  w.tenant("/t", TenantSync::Foreign);
  w.limit("/t/a", "254:0", 1 * MiB);
  w.dirty("/t/a", 32 * MiB);
  w.syncer(2, "/t/b");
  STEP("start /t/a 254:0 wbps=max wiops=max tids=2");
}

TEST(PlannerTenant, NestedTenantIsItsOwnTenant) {
  World w;
  w.tenant("/t");
  w.tenant("/t/container");  // e.g. a delegated container inside the user's manager
  w.limit("/t/container/job", "254:0", 1 * MiB);
  w.dirty("/t/container/job", 32 * MiB);
  w.syncer(2, "/t/shell");
  STEP("start /t/container/job 254:0 wbps=max wiops=max tids=2");
}

TEST(PlannerTenant, LimitAboveTheTenantStillFollowsTheDirtiersTenant) {
  World w;
  w.limit("/users", "254:0", 1 * MiB);  // the admin caps all users together
  w.tenant("/users/u1");
  w.dirty("/users", 32 * MiB);
  w.dirty("/users/u1/a", 32 * MiB);
  w.syncer(2, "/other");
  STEP("start /users 254:0 wbps=max wiops=max tids=2");
}

TEST(PlannerTenant, BoostServingASyncerEndsWhenItsTenantBecomesTheDirtiers) {
  World w;
  w.limit("/t/a", "254:0", 1 * MiB);
  w.dirty("/t/a", 32 * MiB);
  w.syncer(2, "/t/b");
  STEP("start /t/a 254:0 wbps=max wiops=max tids=2");
  w.tenant("/t");  // `cxiosyncctl tenant /t on` while the sync runs
  w.policies.erase(cg("/t/a"));
  w.policies.erase(cg("/t/b"));
  STEP("restore /t/a 254:0 policy-changed", "refuse self-sync /t/a 254:0 tid=2");
}

// Two limited cgroups of one tenant share one budget: 10% of 100 s is 10 s for the tenant, not
// 10 s each.
TEST(PlannerTenant, BudgetIsKeptPerTenant) {
  World w;
  w.tenant("/t");
  w.policy("/t").boostBudget.value = BoostBudget{10, std::chrono::seconds(100)};
  w.limit("/t/a", "254:0", 1 * MiB);
  w.dirty("/t/a", 32 * MiB);
  w.syncer(2, "/outside");
  STEP("start /t/a 254:0 wbps=max wiops=max tids=2");
  w.advance(6);
  STEP();
  w.leave(2);
  STEP("restore /t/a 254:0 syncers-left");
  ASSERT_EQ(w.planner.state().usage.size(), 1u);
  EXPECT_EQ(w.planner.state().usage.begin()->first.account, cg("/t"));  // the tenant's account

  w.dirty("/t/a", 0);
  w.limit("/t/b", "254:0", 1 * MiB);
  w.dirty("/t/b", 32 * MiB);
  w.advance(1);
  w.syncer(3, "/outside");
  STEP("start /t/b 254:0 wbps=max wiops=max tids=3");
  w.advance(4.5);  // the tenant's 6 s + 4.5 s > 10 s
  STEP("restore /t/b 254:0 budget-exhausted");
  w.leave(3);
  STEP();

  // A third limit of the same tenant is refused: the tenant's budget is spent.
  w.dirty("/t/b", 0);
  w.limit("/t/c", "254:0", 1 * MiB);
  w.dirty("/t/c", 32 * MiB);
  w.advance(1);
  w.syncer(4, "/outside");
  STEP("refuse budget-exhausted /t/c 254:0 tid=4");
  ASSERT_TRUE(w.lastRefuse());
  EXPECT_NE(w.lastRefuse()->detail.find("tenant /t (of /t/c) was boosted"), std::string::npos)
      << w.lastRefuse()->detail;
  EXPECT_EQ(w.planner.state().usage.size(), 1u);
}

// Outside tenants the budget stays per limited cgroup: /a and /b each get their own 10 s.
TEST(PlannerTenant, BudgetOutsideTenantsStaysPerHolder) {
  World w;
  w.policy("/").boostBudget.value = BoostBudget{10, std::chrono::seconds(100)};
  w.limit("/a", "254:0", 1 * MiB);
  w.dirty("/a", 32 * MiB);
  w.syncer(2, "/outside");
  STEP("start /a 254:0 wbps=max wiops=max tids=2");
  w.advance(10.5);
  STEP("restore /a 254:0 budget-exhausted");
  w.leave(2);
  STEP();
  w.dirty("/a", 0);
  w.limit("/b", "254:0", 1 * MiB);
  w.dirty("/b", 32 * MiB);
  w.syncer(3, "/outside");
  STEP("start /b 254:0 wbps=max wiops=max tids=3");
  w.advance(1);
  STEP();
  EXPECT_EQ(w.planner.state().usage.size(), 2u);  // /a and /b, each its own account
}

// Budget history handed to a new Planner (a restarted daemon) keeps counting.
TEST(PlannerTenant, BudgetHistoryCarriesIntoANewPlanner) {
  World w;
  w.tenant("/t");
  w.policy("/t").boostBudget.value = BoostBudget{10, std::chrono::seconds(100)};
  w.limit("/t/a", "254:0", 1 * MiB);
  w.dirty("/t/a", 32 * MiB);
  w.syncer(2, "/outside");
  STEP("start /t/a 254:0 wbps=max wiops=max tids=2");
  w.advance(11);
  STEP("restore /t/a 254:0 budget-exhausted");
  w.leave(2);
  STEP();
  PlannerState kept = w.planner.state();
  kept.reported.clear();
  kept.spent.clear();
  w.planner = Planner(kept);
  w.advance(1);
  w.syncer(3, "/outside");
  STEP("refuse budget-exhausted /t/a 254:0 tid=3");
  w.planner = Planner();  // what a restart did before: a fresh budget
  w.leave(3);
  w.advance(0.1);
  w.syncer(4, "/outside");
  STEP("start /t/a 254:0 wbps=max wiops=max tids=4");
}

}  // namespace
}  // namespace cxiosync::testing
