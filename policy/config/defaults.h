// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The shipped defaults (docs/architecture.md §3; reasoning in docs/configuration.md). Pure.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>

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

// The built-in tenant rule: each user's slice, /user.slice/user-N.slice (its session scopes:
// ssh and console logins, and su/sudo from them), and systemd's per-user service manager of
// UID N inside it, /user.slice/user-N.slice/user@N.service (everything user N runs in its
// session manager: apps, cron-like timers, rootless containers), are tenant boundaries. The
// manager is a tenant of its own inside the slice's (tenants nest).
bool isBuiltinTenant(const CgroupPath& cgroup);

// The uid a built-in tenant's name gives: N for /user.slice/user-N.slice and for
// /user.slice/user-N.slice/user@N.service; nullopt for any other cgroup (their owner is the
// uid owning the cgroup directory, a delegated subtree's User=).
std::optional<uint32_t> builtinTenantOwner(const CgroupPath& cgroup);

// Root's interactive syncs are isolated by default (issue 25): a uid-0 syncer in a cgroup
// below /user.slice (an admin's ssh or console session, su/sudo from a user's) whose
// sync_isolation is the built-in default (off for /user.slice) is treated as isolation on.
// Any value stated in a layer (YAML, drop-in, runtime) is used as stated.
bool rootSyncIsolatedByDefault(const CgroupPath& syncerCgroup);

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
