// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The daemon core's one outward hook: whoever wants to follow what the core decides (the D-Bus
// adapter, daemon/app/bus_backend.h) implements this and registers it with Daemon::setObserver().
// The core knows nothing about D-Bus; data flows one way, core -> observer. Called on the
// loop thread; implementations must not throw and must not call back into Daemon::tick().
#include "policy/model/snapshot.h"
#include "policy/planner/planner.h"

namespace cxiosync {

class DaemonObserver {
 public:
  virtual ~DaemonObserver() = default;
  // After every planning step, once its decisions were executed (the executor's active()
  // already reflects them): what was seen and what was decided.
  virtual void afterTick(const Snapshot& snapshot, const PlanResult& plan) = 0;
  // After a configuration reload was applied (SIGHUP, edited config files, D-Bus Reload).
  virtual void afterReload() = 0;
};

}  // namespace cxiosync
