// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/resolver.h"

#include "policy/config/defaults.h"

namespace cxiosync {

namespace {

const PolicySettings& emptySettings() {
  static const PolicySettings kEmpty;
  return kEmpty;
}

template <class T>
void fill(Sourced<T>& out, bool& done, const std::optional<Sourced<T>>& candidate) {
  if (done || !candidate) return;
  out = *candidate;
  done = true;
}

}  // namespace

PolicyResolver::PolicyResolver()
    : PolicyResolver(PolicyLayers{builtinPolicyDefaults(), {}, {}, {}}) {}

PolicyResolver::PolicyResolver(const PolicyLayers& layers) {
  for (const auto* layer : {&layers.defaults, &layers.yaml, &layers.dropIn, &layers.runtime}) {
    for (const auto& [path, settings] : *layer) {
      if (settings.empty()) continue;
      merged_[path.relative()].overlay(settings);
    }
  }
  // Guarantee a value for every knob at the root.
  PolicySettings root = builtinPolicyDefaults()[CgroupPath()];
  root.overlay(merged_[std::string()]);
  merged_[std::string()] = std::move(root);
}

const PolicySettings& PolicyResolver::explicitSettings(const CgroupPath& cgroup) const {
  auto it = merged_.find(cgroup.relative());
  return it == merged_.end() ? emptySettings() : it->second;
}

// `tenant` of exactly this cgroup: its own setting in any layer, else the built-in rule.
Sourced<bool> PolicyResolver::tenantAt(const CgroupPath& cgroup) const {
  auto it = merged_.find(cgroup.relative());
  if (it != merged_.end() && it->second.tenant) return *it->second.tenant;
  return Sourced<bool>{isBuiltinTenant(cgroup), ValueSource::builtin()};
}

EffectivePolicy PolicyResolver::resolve(const CgroupPath& cgroup) const {
  EffectivePolicy out;
  out.tenant = tenantAt(cgroup);
  for (CgroupPath p = cgroup;; p = p.parent()) {
    if (p == cgroup ? out.tenant.value : tenantAt(p).value) {
      out.tenantRoot = p;
      break;
    }
    if (p.isRoot()) break;
  }
  bool iso = false, boost = false, ceiling = false, maxBoost = false, budget = false;
  bool tenantSync = false;
  std::string_view rel = cgroup.relative();
  for (;;) {
    auto it = merged_.find(rel);
    if (it != merged_.end()) {
      const PolicySettings& s = it->second;
      fill(out.syncIsolation, iso, s.syncIsolation);
      fill(out.boost, boost, s.boost);
      fill(out.boostCeiling, ceiling, s.boostCeiling);
      fill(out.maxBoost, maxBoost, s.maxBoost);
      fill(out.boostBudget, budget, s.boostBudget);
      fill(out.tenantSync, tenantSync, s.tenantSync);
      if (iso && boost && ceiling && maxBoost && budget && tenantSync) break;
    }
    if (rel.empty()) break;
    auto slash = rel.rfind('/');
    rel = slash == std::string_view::npos ? std::string_view() : rel.substr(0, slash);
  }
  return out;
}

const EffectivePolicy& PolicyCache::get(const CgroupPath& cgroup) {
  auto it = cache_.find(cgroup.relative());
  if (it != cache_.end()) return it->second;
  return cache_.emplace(cgroup.relative(), resolver_->resolve(cgroup)).first->second;
}

}  // namespace cxiosync
