// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The planner's output: what the executor should do, each with the reason a log line needs.
#include <string>
#include <variant>
#include <vector>

#include "policy/formats/io_max.h"
#include "policy/model/cgroup_path.h"
#include "policy/model/snapshot.h"

namespace cxiosync {

// A boost in force (as journaled by the executor and handed back to the planner each step).
struct ActiveBoost {
  CgroupPath cgroup;  // where the limit sits (may be an ancestor of the dirtier)
  DevNum device;
  IoMaxEntry original;  // the line as it was before we wrote (all four keys)
  IoMaxEntry boosted;   // what we wrote
  TimePoint started{};
  std::vector<int64_t> syncerTids;  // foreign syncers this boost serves
  bool shutdownLift = false;        // lift_on_shutdown: never restored by the planner
};

enum class RefuseReason {
  SelfSync,          // the syncer is inside the limited subtree
  BoostDenied,       // boost: deny on the holder (or an ancestor)
  BudgetExhausted,   // boost_budget used up in the window
  BelowMinDirty,     // dirty+writeback below min_dirty_bytes
  IsolationOff,      // the syncer's sync_isolation is off
  DryRun,            // would have boosted
  CeilingNotHigher,  // the ceiling is not above the current limit: nothing to lift
};
const char* refuseReasonName(RefuseReason r);  // "self-sync", "boost-denied", ...

enum class EndReason {
  SyncersLeft,      // the last foreign syncer served by the boost left its sync call
  MaxBoostTime,     // max_boost_seconds of the holder reached
  BudgetExhausted,  // boost_budget of the holder used up in its window
  Shutdown,         // clean daemon stop (restore-all)
  PolicyChanged,    // the holder is now boost: deny, or no served syncer is eligible any more
  CgroupGone,       // the holder cgroup vanished from the snapshot (executor sees ENOENT)
};
const char* endReasonName(EndReason r);  // "syncers-left", "max-boost-time", ...

struct StartBoost {
  CgroupPath cgroup;   // holder of the limit
  CgroupPath dirtier;  // the cgroup that owns the dirty pages (== cgroup or a descendant)
  DevNum device;
  IoMaxEntry original;
  IoMaxEntry boosted;
  Syncer trigger;      // shutdown lift: a synthetic syncer (tid 0, comm "(shutdown)", root)
  std::string reason;  // one line a person can read
  // lift_on_shutdown: pass to BoostExecutor::start(d, now, d.shutdownLift); never restored.
  bool shutdownLift = false;
  std::vector<int64_t> syncerTids;  // every syncer this boost serves from the start
};

struct RestoreBoost {
  CgroupPath cgroup;
  DevNum device;
  IoMaxEntry expectedCurrent;  // compare-and-restore: restore only if io.max still holds this
  IoMaxEntry restoreTo;        // the recorded original
  EndReason why = EndReason::SyncersLeft;
};

// The set of syncers served by an active boost changed (no kernel write needed).
struct UpdateBoost {
  CgroupPath cgroup;
  DevNum device;
  std::vector<int64_t> syncerTids;
};

struct Refuse {
  CgroupPath cgroup;
  CgroupPath dirtier;
  DevNum device;
  Syncer syncer;
  RefuseReason why = RefuseReason::SelfSync;
  std::string detail;
};

using Decision = std::variant<StartBoost, RestoreBoost, UpdateBoost, Refuse>;

}  // namespace cxiosync
