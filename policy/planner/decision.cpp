// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/planner/decision.h"

namespace cxiosync {

const char* refuseReasonName(RefuseReason r) {
  switch (r) {
    case RefuseReason::SelfSync:
      return "self-sync";
    case RefuseReason::BoostDenied:
      return "boost-denied";
    case RefuseReason::BudgetExhausted:
      return "budget-exhausted";
    case RefuseReason::BelowMinDirty:
      return "below-min-dirty";
    case RefuseReason::IsolationOff:
      return "isolation-off";
    case RefuseReason::DryRun:
      return "dry-run";
    case RefuseReason::CeilingNotHigher:
      return "ceiling-not-higher";
  }
  return "unknown";
}

const char* endReasonName(EndReason r) {
  switch (r) {
    case EndReason::SyncersLeft:
      return "syncers-left";
    case EndReason::MaxBoostTime:
      return "max-boost-time";
    case EndReason::BudgetExhausted:
      return "budget-exhausted";
    case EndReason::Shutdown:
      return "shutdown";
    case EndReason::PolicyChanged:
      return "policy-changed";
    case EndReason::CgroupGone:
      return "cgroup-gone";
  }
  return "unknown";
}

}  // namespace cxiosync
