// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The boost planner: a pure state machine, snapshot + active boosts + policy + clock ->
// decisions. No syscalls, no logging, no globals. Rules and the reasons behind them:
// docs/planner.md.
//
// The daemon owns one Planner and calls step() on every tick (poll tick, tracefs event, or
// when PlanResult::nextWakeup is reached), with the boosts the executor currently holds
// (BoostExecutor::active()). It executes the decisions in the order given: restores first,
// then updates, then starts, then refusals (which are only logged).
#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "policy/config/knobs.h"
#include "policy/model/snapshot.h"
#include "policy/planner/decision.h"

namespace cxiosync {

// The effective policy of a cgroup (PolicyResolver::resolve in production, a fake in tests).
// Called at most once per distinct cgroup per step.
using PolicyLookup = std::function<EffectivePolicy(const CgroupPath&)>;

// One sync call of one thread: a thread that leaves sync() and enters it again is a new
// syncer for the cooldown rule (same tid, later `since`).
struct SyncerId {
  int64_t tid = 0;
  TimePoint since{};
  auto operator<=>(const SyncerId&) const = default;
};

// Who a sync is charged to (docs/policy-semantics.md §5, "Budgets"): the syncer's tenant
// root; outside every tenant, its uid when that is not 0; else the system (root's syncs outside
// tenants, and syncers whose uid could not be read). `Any` is a record from a budgets.json
// written before budgets were kept per syncing party: it counts against every party's share.
struct SyncParty {
  enum class Kind { System, User, Tenant, Any };
  Kind kind = Kind::System;
  uint32_t uid = 0;   // User
  CgroupPath tenant;  // Tenant
  auto operator<=>(const SyncParty&) const = default;
  static SyncParty system() { return {}; }
  static SyncParty user(uint32_t uid) { return {Kind::User, uid, {}}; }
  static SyncParty ofTenant(CgroupPath root) { return {Kind::Tenant, 0, std::move(root)}; }
  static SyncParty any() { return {Kind::Any, 0, {}}; }
  // "the system", "uid 1000", "tenant /user.slice/user-1000.slice", "any syncer"
  std::string describe() const;
};

// A budget account: the limit's account (its tenant root, or the holder outside tenants) and
// the syncing party it is charged for. Each party has the account's whole boost_budget: no
// party's syncs can spend the share another party's syncs rely on.
struct BudgetKey {
  CgroupPath account;
  SyncParty party;
  auto operator<=>(const BudgetKey&) const = default;
};

// What the planner remembers between steps. A plain value: copyable, comparable. The daemon
// keeps `usage` (and historyLostAt) across restarts in <run-dir>/budgets.json
// (daemon/act/budget_store.h) and hands it to Planner(PlannerState); the rest is per sync call
// and starts empty.
struct PlannerState {
  struct Interval {
    TimePoint begin{}, end{};
    bool operator==(const Interval&) const = default;
  };
  // Budget accounting per (account, syncing party), across the account's devices: the time
  // during which a boost of one of the account's limits served a syncer of that party.
  struct HolderUsage {
    std::vector<Interval> closed;        // past boosted time, oldest first
    std::optional<TimePoint> openSince;  // boosted now, since
    TimePoint lastSeenActive{};          // last step that saw a boost on it in force
    bool operator==(const HolderUsage&) const = default;
  };
  std::map<BudgetKey, HolderUsage> usage;
  // The budget history could not be read at this time (budgets.json unreadable): every
  // account counts as boosted for all of its window before it. A lost history must not turn
  // into a fresh budget.
  std::optional<TimePoint> historyLostAt;
  // The time of the last step: a party that joins a running boost was added then (by an
  // UpdateBoost), not when the boost started, and is charged from then. Unknown (a new
  // Planner): from the boost's start.
  std::optional<TimePoint> lastStep;

  struct PairKey {
    CgroupPath cgroup;
    DevNum device;
    auto operator<=>(const PairKey&) const = default;
  };
  // Cooldown: syncers whose boost of (cgroup, device) was ended by max_boost_seconds or the
  // budget; they neither start nor join a boost of that pair again. Dropped when they leave.
  std::map<PairKey, std::vector<SyncerId>> spent;

  // Refusals already reported, per syncer (fingerprints of holder, device, reason): each is
  // reported once per sync call, not on every tick. Dropped when the syncer leaves.
  std::map<SyncerId, std::unordered_set<uint64_t>> reported;

  bool operator==(const PlannerState&) const = default;

  // Seconds `key` was boosted within [now - window, now] (plus its account's records from
  // before per-party budgets, SyncParty::Any).
  std::chrono::nanoseconds usedWithin(const BudgetKey& key, TimePoint now,
                                      std::chrono::seconds window) const;
  // When `key`'s use within the sliding window first drops below `allowed` (now if it is
  // below already).
  TimePoint budgetFreesAt(const BudgetKey& key, TimePoint now, std::chrono::seconds window,
                          std::chrono::nanoseconds allowed) const;
};

struct PlanResult {
  std::vector<Decision> decisions;
  // Call step() again by then at the latest (a max_boost_seconds or budget deadline), even if
  // nothing else happens. nullopt: no deadline pending.
  std::optional<TimePoint> nextWakeup;
};

class Planner {
 public:
  Planner();
  explicit Planner(PlannerState state);
  ~Planner();
  Planner(const Planner&);
  Planner& operator=(const Planner&);
  Planner(Planner&&) noexcept;
  Planner& operator=(Planner&&) noexcept;

  // One step. `active`: every boost in force (journaled), including shutdown lifts.
  // `shuttingDown`: the system is going down (with settings.liftOnShutdown: lift everything).
  PlanResult step(const Snapshot& snapshot, const std::vector<ActiveBoost>& active,
                  const PolicyLookup& policy, const GlobalSettings& settings, bool shuttingDown);

  const PlannerState& state() const { return state_; }

 private:
  struct Scratch;
  PlannerState state_;
  std::unique_ptr<Scratch> scratch_;  // per-step buffers, reused to keep steps allocation-poor
};

// Clean daemon stop without lift: a RestoreBoost for every boost that is not a shutdown lift.
std::vector<Decision> planRestoreAll(const std::vector<ActiveBoost>& active, EndReason why);

}  // namespace cxiosync
