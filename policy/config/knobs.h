// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The policy knobs of docs/architecture.md §3 as plain values, and where each effective value came
// from.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "policy/model/cgroup_path.h"

namespace cxiosync {

// Where a value came from, for `show`: "runtime", "default", or a file:line.
struct ValueSource {
  enum class Kind { Default, Yaml, DropIn, Runtime } kind = Kind::Default;
  std::string file;  // empty for Default/Runtime
  int line = 0;
  std::string describe() const;  // "default", "runtime", "/etc/cxiosync/cxiosync.yaml:12"
  bool operator==(const ValueSource&) const = default;

  static ValueSource builtin() { return {}; }
  static ValueSource runtime() { return {Kind::Runtime, {}, 0}; }
  static ValueSource yaml(std::string file, int line) {
    return {Kind::Yaml, std::move(file), line};
  }
  static ValueSource dropIn(std::string file, int line) {
    return {Kind::DropIn, std::move(file), line};
  }
};

template <class T>
struct Sourced {
  T value{};
  ValueSource source;
  bool operator==(const Sourced&) const = default;
};

enum class BoostPermission { Allow, Deny };

// boost_ceiling: inherit (syncer's own effective limit, max if unlimited), max, or bytes/s.
struct BoostCeiling {
  enum class Kind { Inherit, Max, Bytes } kind = Kind::Inherit;
  uint64_t bytesPerSecond = 0;  // Kind::Bytes only
  bool operator==(const BoostCeiling&) const = default;
};

// boost_budget: a dirtier is boosted at most `percent` of any sliding `window`.
// The member defaults mean "no budget" (100%); the shipped default policy (25% of 120 s) comes
// from builtinPolicyDefaults() in policy/config/defaults.h, see docs/configuration.md.
struct BoostBudget {
  uint32_t percent = 100;  // 1..100
  std::chrono::seconds window{60};
  bool operator==(const BoostBudget&) const = default;
};

// tenant_sync: how a sync from inside a tenant is treated when the throttled dirtier is in the
// same tenant. Self: like a self-sync (no boost: a tenant cannot lift its own limits by syncing
// from a sibling cgroup it also owns). Foreign: like any other foreign sync.
enum class TenantSync { Self, Foreign };

// The per-cgroup policy after layering and inheritance: every field has a value and a source.
// Obtain it from PolicyResolver::resolve() (policy/config/resolver.h), which fills every field
// from the shipped defaults at the root; a default-constructed EffectivePolicy is NOT the
// shipped default (its maxBoost is 0 s).
struct EffectivePolicy {
  Sourced<bool> syncIsolation;
  Sourced<BoostPermission> boost;
  Sourced<BoostCeiling> boostCeiling;
  Sourced<std::chrono::seconds> maxBoost;
  Sourced<BoostBudget> boostBudget;
  // `tenant`: this very cgroup is a tenant boundary. NOT inherited: it marks a subtree root.
  // Default: on for systemd's per-user managers (/user.slice/user-UID.slice/user@UID.service).
  Sourced<bool> tenant;
  // tenant_sync: inherited like the other knobs; the planner reads it at the tenant root.
  Sourced<TenantSync> tenantSync;
  // The nearest ancestor-or-self whose `tenant` is on: the tenant this cgroup belongs to.
  std::optional<CgroupPath> tenantRoot;
};

// A partial per-cgroup policy as one layer (built-in defaults, YAML, drop-ins, runtime) states
// it for one cgroup: only the knobs that layer sets. Unset knobs fall through to lower layers
// of the same cgroup, then to the nearest ancestor (docs/policy-semantics.md).
struct PolicySettings {
  std::optional<Sourced<bool>> syncIsolation;
  std::optional<Sourced<BoostPermission>> boost;
  std::optional<Sourced<BoostCeiling>> boostCeiling;
  std::optional<Sourced<std::chrono::seconds>> maxBoost;
  std::optional<Sourced<BoostBudget>> boostBudget;
  std::optional<Sourced<bool>> tenant;  // not inherited (see EffectivePolicy::tenant)
  std::optional<Sourced<TenantSync>> tenantSync;

  bool empty() const {
    return !syncIsolation && !boost && !boostCeiling && !maxBoost && !boostBudget && !tenant &&
           !tenantSync;
  }
  // Every knob set in `higher` replaces the one here; knobs `higher` leaves unset are kept.
  void overlay(const PolicySettings& higher) {
    if (higher.syncIsolation) syncIsolation = higher.syncIsolation;
    if (higher.boost) boost = higher.boost;
    if (higher.boostCeiling) boostCeiling = higher.boostCeiling;
    if (higher.maxBoost) maxBoost = higher.maxBoost;
    if (higher.boostBudget) boostBudget = higher.boostBudget;
    if (higher.tenant) tenant = higher.tenant;
    if (higher.tenantSync) tenantSync = higher.tenantSync;
  }
  bool operator==(const PolicySettings&) const = default;
};

enum class DetectorKind { Auto, Tracefs, Procfs };

struct GlobalSettings {
  DetectorKind detector = DetectorKind::Auto;
  std::chrono::milliseconds pollInterval{100};
  bool watchFsync = false;
  uint64_t minDirtyBytes = 1 << 20;  // 1 MiB
  bool dryRun = false;
  bool liftOnShutdown = true;
};

// Where each global setting came from, for `show`. Default-constructed = built-in defaults.
struct GlobalSources {
  ValueSource detector, pollInterval, watchFsync, minDirtyBytes, dryRun, liftOnShutdown;
};

}  // namespace cxiosync
