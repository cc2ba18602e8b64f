// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Policy resolution (docs/policy-semantics.md): four layers, highest first
//   runtime (D-Bus/CLI) > drop-in ([X-CxIOSync]) > YAML > built-in default,
// and inheritance down the cgroup tree. For each knob of a cgroup, the value comes from the
// MOST SPECIFIC cgroup (self, then parent, ... up to the root) that sets it in ANY layer; within
// that one cgroup the highest layer wins. So a YAML value on /a/b beats a runtime value on /a
// for /a/b and its descendants, and a runtime value on /a beats a YAML value on /a.
// Every value carries its source (file:line, "runtime", "default"). Pure and immutable.
#include <map>
#include <string>
#include <unordered_map>

#include "policy/config/knobs.h"
#include "policy/model/cgroup_path.h"

namespace cxiosync {

struct PolicyLayers {
  std::map<CgroupPath, PolicySettings> defaults;  // builtinPolicyDefaults() normally
  std::map<CgroupPath, PolicySettings> yaml;      // Config::cgroups
  std::map<CgroupPath, PolicySettings> dropIn;    // per unit cgroup, from parseDropIns()
  std::map<CgroupPath, PolicySettings> runtime;   // set through D-Bus/CLI
};

class PolicyResolver {
 public:
  // Built-in defaults only.
  PolicyResolver();
  // Merges the layers once (O(total entries)). Knobs that no layer sets on the root fall back to
  // the shipped root defaults (builtinPolicyDefaults()), so resolve() always yields a value.
  explicit PolicyResolver(const PolicyLayers& layers);

  // The effective policy of `cgroup`: O(depth) lookups in the merged table (one per ancestor),
  // no dependence on how many cgroups exist; ~1 µs. For per-step use on 10,000 cgroups see
  // PolicyCache below, which avoids even that.
  EffectivePolicy resolve(const CgroupPath& cgroup) const;

  // The merged settings stated for exactly this cgroup (no inheritance); empty if none.
  // For `show`: which knobs are set here vs inherited.
  const PolicySettings& explicitSettings(const CgroupPath& cgroup) const;

  // `tenant` of exactly this cgroup (not inherited): its own setting, else isBuiltinTenant().
  Sourced<bool> tenantAt(const CgroupPath& cgroup) const;

  // Every cgroup any layer mentions, with its merged explicit settings.
  const std::map<std::string, PolicySettings, std::less<>>& table() const { return merged_; }

 private:
  std::map<std::string, PolicySettings, std::less<>> merged_;  // key: CgroupPath::relative()
};

// Memoizes resolve() per cgroup for a resolver that does not change (rebuild both together on
// reload / runtime change). Not thread-safe; the daemon is single-threaded.
class PolicyCache {
 public:
  explicit PolicyCache(const PolicyResolver& resolver) : resolver_(&resolver) {}
  const EffectivePolicy& get(const CgroupPath& cgroup);
  void clear() { cache_.clear(); }

 private:
  const PolicyResolver* resolver_;
  std::unordered_map<std::string, EffectivePolicy> cache_;
};

}  // namespace cxiosync
