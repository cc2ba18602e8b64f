// SPDX-License-Identifier: GPL-2.0-or-later
// Randomized property tests (fixed seeds, reproducible): random cgroup trees, limits, dirty
// data, syncers coming and going, policy flips, outsiders rewriting io.max, cgroups vanishing,
// dry run and shutdown, all driven through the planner and the simulated executor of world.h.
//
// Properties (checked by World::apply on every decision and here after every step):
//  P1 a restore always returns exactly the recorded original (and the original recorded at a
//     start is exactly what io.max held), expectedCurrent is exactly what was written;
//  P2 no two active boosts for the same (cgroup, device), and never a second StartBoost;
//  P3 once every syncer is gone, every non-shutdown boost is restored within 2 steps;
//  P4 no boost outlives max_boost_seconds by more than one step;
//  P5 a boost never lowers a limit and never touches rbps/riops;
//  P6 a syncer is refused for the budget, or a boost ends by it, only when the share of the
//     syncer's own party (its tenant, its uid, or the system) is spent: no party's syncs
//     spend another's (issue 25).
#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "tests/unit/planner/world.h"

namespace cxiosync::testing {
namespace {

struct Stats {
  uint64_t steps = 0, starts = 0, lifts = 0, restores = 0, updates = 0, refusals = 0;
  uint64_t drains = 0;
  uint64_t partyBudgetRefusals = 0;  // P6 checked on a refusal of a party other than the system
  std::map<std::string, uint64_t> endReasons;
};

class Sim {
 public:
  Sim(uint32_t seed, Stats& stats) : rng_(seed), stats_(stats) {
    w_.settings.minDirtyBytes = MiB;
    w_.snap.devices.lower[dev("7:0")] = {dev("254:0")};
    w_.snap.devices.lower[dev("253:0")] = {dev("8:0"), dev("8:16")};
    const char* tops[] = {"/system.slice", "/user.slice", "/tenants", "/machine.slice"};
    for (const char* t : tops) {
      paths_.push_back(t);
      int kids = int(pick(4));
      for (int k = 0; k < kids; ++k) {
        std::string c = std::string(t) + "/c" + std::to_string(k);
        paths_.push_back(c);
        if (coin(0.3)) paths_.push_back(c + "/g");
      }
    }
    paths_.push_back("/cg1");
    paths_.push_back("/cg10");
    for (const auto& p : paths_) w_.addCgroup(p);
    for (int i = 0; i < 8; ++i) randomLimit();
    for (const char* t : {"/tenants/c0", "/user.slice/c1"}) {
      if (std::find(paths_.begin(), paths_.end(), t) != paths_.end()) w_.tenant(t);
    }
  }

  void run(int steps) {
    for (int i = 0; i < steps; ++i) {
      mutate();
      stepAndCheck();
      if (coin(0.01)) drain();
    }
    drain();
  }

 private:
  uint64_t pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool coin(double p) { return std::bernoulli_distribution(p)(rng_); }
  const std::string& randomPath() { return paths_[pick(paths_.size())]; }
  DevNum randomDev() {
    static const char* devs[] = {"8:0", "8:16", "254:0", "7:0", "253:0"};
    return dev(devs[pick(5)]);
  }
  std::optional<uint64_t> randomValue(bool allowAbsent) {
    switch (pick(allowAbsent ? 4 : 3)) {
      case 0:
        return kUnlimited;
      case 1:
        return (1 + pick(16)) * MiB;
      case 2:
        return 1 + pick(2000);
      default:
        return std::nullopt;
    }
  }
  void randomLimit() {
    auto& st = w_.addCgroup(randomPath());
    IoMaxEntry e;
    e.dev = randomDev();
    e.limits = IoLimits{randomValue(true), randomValue(true), randomValue(true), randomValue(true)};
    World::writeLine(st, e);
  }

  void mutate() {
    w_.advance(double(pick(3000)) / 1000.0);
    const int n = int(pick(4));
    for (int i = 0; i < n; ++i) {
      switch (pick(14)) {
        case 0:
        case 1: {  // a syncer enters
          if (w_.snap.syncers.size() > 12) break;
          static const SyncSyscall calls[] = {SyncSyscall::Sync, SyncSyscall::Syncfs,
                                              SyncSyscall::Fsync};
          auto call = calls[pick(3)];
          std::optional<DevNum> target;
          if (call != SyncSyscall::Sync && coin(0.7)) target = randomDev();
          Syncer& s = w_.syncer(nextTid_++, randomPath(), call, target);
          static const uint32_t uids[] = {0, 1000, 1001};
          if (coin(0.7)) s.euid = uids[pick(3)];
          if (coin(0.3)) {
            for (int k = 0; k < 2; ++k) {
              s.waitsOn.push_back({w_.inode(randomPath()), randomDev()});
            }
          }
          break;
        }
        case 2:  // a syncer leaves
          if (!w_.snap.syncers.empty()) {
            w_.leave(w_.snap.syncers[pick(w_.snap.syncers.size())].tid);
          }
          break;
        case 3:  // a syncer loops: new call
          if (!w_.snap.syncers.empty()) {
            w_.snap.syncers[pick(w_.snap.syncers.size())].since = w_.snap.now;
          }
          break;
        case 4:  // a syncer is moved to another cgroup
          if (!w_.snap.syncers.empty()) {
            w_.snap.syncers[pick(w_.snap.syncers.size())].cgroup = cg(randomPath());
          }
          break;
        case 5:
        case 6: {  // dirty data changes
          auto& st = w_.addCgroup(randomPath());
          st.fileDirty = coin(0.5) ? pick(64) * MiB : pick(MiB);
          st.fileWriteback = pick(4) * MiB;
          break;
        }
        case 7:  // an outsider (systemd, an admin) rewrites io.max
          randomLimit();
          break;
        case 8: {  // policy flips
          auto& p = w_.policy(randomPath());
          switch (pick(5)) {
            case 0:
              p.syncIsolation.value = !p.syncIsolation.value;
              break;
            case 1:
              p.boost.value = coin(0.7) ? BoostPermission::Allow : BoostPermission::Deny;
              break;
            case 2: {
              static const BoostCeiling::Kind kinds[] = {
                  BoostCeiling::Kind::Inherit, BoostCeiling::Kind::Max, BoostCeiling::Kind::Bytes};
              p.boostCeiling.value = BoostCeiling{kinds[pick(3)], (1 + pick(64)) * MiB};
              break;
            }
            case 3:
              p.maxBoost.value = std::chrono::seconds(pick(40));
              break;
            case 4:
              p.boostBudget.value =
                  BoostBudget{uint32_t(1 + pick(100)), std::chrono::seconds(1 + pick(120))};
              break;
          }
          break;
        }
        case 9:  // a cgroup vanishes (and may come back later, as a new one)
          if (coin(0.3)) {
            const auto& p = randomPath();
            if (p != "/") w_.removeCgroup(p);
          } else {
            w_.addCgroup(randomPath());
          }
          break;
        case 10:
          if (coin(0.1)) w_.settings.dryRun = !w_.settings.dryRun;
          break;
        case 11:
          if (coin(0.05)) w_.shuttingDown = !w_.shuttingDown;
          if (coin(0.05)) w_.settings.liftOnShutdown = !w_.settings.liftOnShutdown;
          break;
        default:
          break;
      }
    }
  }

  void stepAndCheck() {
    const TimePoint now = w_.snap.now;
    std::vector<ActiveBoost> before = w_.active;
    auto lines = w_.step();
    ++stats_.steps;
    for (const Decision& d : w_.last.decisions) {
      if (auto* s = std::get_if<StartBoost>(&d)) {
        ++(s->shutdownLift ? stats_.lifts : stats_.starts);
      } else if (auto* r = std::get_if<RestoreBoost>(&d)) {
        ++stats_.restores;
        ++stats_.endReasons[endReasonName(r->why)];
      } else if (std::holds_alternative<UpdateBoost>(d)) {
        ++stats_.updates;
      } else {
        ++stats_.refusals;
      }
    }
    checkBudgetShares();
    // P2
    for (size_t i = 0; i < w_.active.size(); ++i) {
      for (size_t j = i + 1; j < w_.active.size(); ++j) {
        ASSERT_FALSE(w_.active[i].cgroup == w_.active[j].cgroup &&
                     w_.active[i].device == w_.active[j].device)
            << "two boosts of " << w_.active[i].cgroup.display();
      }
    }
    // P4: a boost still in force after this step did not pass its holder's max_boost_seconds
    // before the previous step (the planner sees time only when it is called).
    for (const ActiveBoost& b : w_.active) {
      if (b.shutdownLift) continue;
      auto maxBoost = w_.lookup(b.cgroup).maxBoost.value;
      if (maxBoost.count() > 0) {
        ASSERT_LT(now - b.started, maxBoost) << b.cgroup.display() << " boosted too long";
      }
    }
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    (void)before;
    (void)lines;
  }

  // The party a syncer's boosts are charged to, as docs/policy-semantics.md §5 defines it.
  SyncParty partyOf(const Syncer& s) const {
    const EffectivePolicy p = w_.lookup(s.cgroup);
    if (p.tenantRoot) return SyncParty::ofTenant(*p.tenantRoot);
    if (s.euid && *s.euid != 0) return SyncParty::user(*s.euid);
    return SyncParty::system();
  }
  // P6, against the planner's own accounting after the step: the key of the refused syncer (or
  // of every member of a boost ended by the budget) must have spent its share.
  void checkBudgetShares() {
    auto spent = [&](const CgroupPath& holder, const Syncer& s) {
      const EffectivePolicy hp = w_.lookup(holder);
      const CgroupPath account = hp.tenantRoot ? *hp.tenantRoot : holder;
      const BoostBudget budget = w_.lookup(account).boostBudget.value;
      const auto allowed = std::chrono::nanoseconds(budget.window) * budget.percent / 100;
      const BudgetKey key{account, partyOf(s)};
      return w_.planner.state().usedWithin(key, w_.snap.now, budget.window) >= allowed;
    };
    for (const Decision& d : w_.last.decisions) {
      if (auto* r = std::get_if<Refuse>(&d); r && r->why == RefuseReason::BudgetExhausted) {
        const Syncer* s = w_.findSyncer(r->syncer.tid);
        ASSERT_TRUE(s);
        EXPECT_TRUE(spent(r->cgroup, *s))
            << "tid " << s->tid << " refused for " << partyOf(*s).describe()
            << " whose share is not spent: " << r->detail;
        if (partyOf(*s).kind != SyncParty::Kind::System) ++stats_.partyBudgetRefusals;
      }
    }
  }

  // P3: all syncers leave; every boost that is not a shutdown lift must be restored soon.
  void drain() {
    ++stats_.drains;
    w_.snap.syncers.clear();
    for (int i = 0; i < 2; ++i) {
      w_.advance(0.1);
      stepAndCheck();
    }
    for (const ActiveBoost& b : w_.active) {
      EXPECT_TRUE(b.shutdownLift) << "boost of " << b.cgroup.display() << " " << b.device.str()
                                  << " left without a restore";
    }
    // Shutdown lifts are the daemon's to restore on a clean stop.
    if (!w_.shuttingDown) {
      for (const Decision& d : planRestoreAll(w_.active, EndReason::Shutdown)) w_.apply(d);
      w_.active.clear();
    }
  }

  std::mt19937_64 rng_;
  Stats& stats_;
  World w_;
  std::vector<std::string> paths_{"/"};
  int64_t nextTid_ = 100;
};

TEST(PlannerProperties, RandomizedRunsKeepEveryInvariant) {
  Stats stats;
  constexpr int kRuns = 24;
  constexpr int kSteps = 1000;
  for (uint32_t seed = 1; seed <= kRuns; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Sim(seed, stats).run(kSteps);
    if (HasFailure()) break;
  }
  std::cout << "[ stats    ] runs=" << kRuns << " steps=" << stats.steps
            << " starts=" << stats.starts << " lifts=" << stats.lifts
            << " restores=" << stats.restores << " updates=" << stats.updates
            << " refusals=" << stats.refusals << " drains=" << stats.drains
            << " party_budget_refusals=" << stats.partyBudgetRefusals << "\n[ stats    ]";
  for (const auto& [k, v] : stats.endReasons) std::cout << " " << k << "=" << v;
  std::cout << "\n";
  // The generator must actually exercise the planner, not pass vacuously.
  EXPECT_GT(stats.starts, 1000u);
  EXPECT_GT(stats.restores, 1000u);
  EXPECT_GT(stats.updates, 100u);
  EXPECT_GT(stats.endReasons["max-boost-time"], 10u);
  EXPECT_GT(stats.endReasons["budget-exhausted"], 10u);
  EXPECT_GT(stats.endReasons["cgroup-gone"], 0u);
  EXPECT_GT(stats.endReasons["policy-changed"], 10u);
  EXPECT_GT(stats.lifts, 10u);
  EXPECT_GT(stats.partyBudgetRefusals, 100u);
}

// The planner state is a value: copying a planner mid-run and feeding both the same inputs
// gives the same decisions (the daemon may snapshot it, tests may fork it).
TEST(PlannerProperties, StateIsAValue) {
  World a;
  a.limit("/cg1", "254:0", MiB);
  a.dirty("/cg1", 32 * MiB);
  a.syncer(2, "/cg2");
  a.step();
  Planner copy(a.planner.state());
  EXPECT_EQ(copy.state(), a.planner.state());
  a.advance(1);
  a.leave(2);
  auto policy = [&](const CgroupPath& p) { return a.lookup(p); };
  auto r1 = copy.step(a.snap, a.active, policy, a.settings, false);
  auto r2 = a.planner.step(a.snap, a.active, policy, a.settings, false);
  ASSERT_EQ(r1.decisions.size(), r2.decisions.size());
  for (size_t i = 0; i < r1.decisions.size(); ++i) {
    EXPECT_EQ(render(r1.decisions[i]), render(r2.decisions[i]));
  }
}

}  // namespace
}  // namespace cxiosync::testing
