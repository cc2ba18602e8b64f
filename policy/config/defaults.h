// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The shipped defaults (docs/architecture.md §3; reasoning in docs/configuration.md). Pure.
#include <chrono>
#include <map>

#include "policy/config/knobs.h"
#include "policy/model/cgroup_path.h"

namespace cxiosync {

// Defaults of the knobs that are not cgroup-specific; set on the root cgroup and inherited.
inline constexpr bool kDefaultRootSyncIsolation = true;
inline constexpr BoostPermission kDefaultBoost = BoostPermission::Allow;
inline constexpr std::chrono::seconds kDefaultMaxBoost{30};
inline constexpr uint32_t kDefaultBudgetPercent = 25;
inline constexpr std::chrono::seconds kDefaultBudgetWindow{120};

inline constexpr TenantSync kDefaultTenantSync = TenantSync::Self;

// The built-in tenant rule: systemd's per-user service manager of UID N,
// /user.slice/user-N.slice/user@N.service, is a tenant boundary (everything user N runs in
// its session manager: apps, cron-like timers, rootless containers). Its session scopes
// (/user.slice/user-N.slice/session-*.scope) are not below it and are left alone.
bool isBuiltinTenant(const CgroupPath& cgroup);

// The built-in layer, every value with ValueSource::Kind::Default:
//   /              sync_isolation on, boost allow, boost_ceiling inherit,
//                  max_boost_seconds 30, boost_budget 25% of 120s, tenant_sync self
//   /init.scope    sync_isolation on
//   /system.slice  sync_isolation on
//   /user.slice    sync_isolation off
//   /machine.slice sync_isolation off
// The root entry sets every knob, so resolution always finds a value.
std::map<CgroupPath, PolicySettings> builtinPolicyDefaults();

// The built-in global settings (GlobalSettings' member defaults).
GlobalSettings builtinGlobalSettings();

}  // namespace cxiosync
