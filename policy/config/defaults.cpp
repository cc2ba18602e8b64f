// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/defaults.h"

namespace cxiosync {

namespace {
CgroupPath path(std::string_view text) {
  auto p = CgroupPath::parse(text);
  return p ? *p : CgroupPath();
}
bool allDigits(std::string_view s) {
  if (s.empty() || s.size() > 10) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

bool isBuiltinTenant(const CgroupPath& cgroup) {
  constexpr std::string_view kUserSlice = "user.slice/user-";
  std::string_view rel = cgroup.relative();
  if (rel.substr(0, kUserSlice.size()) != kUserSlice) return false;
  rel.remove_prefix(kUserSlice.size());
  const size_t dot = rel.find(".slice/user@");
  if (dot == std::string_view::npos) return false;
  const std::string_view uid = rel.substr(0, dot);
  rel.remove_prefix(dot + std::string_view(".slice/user@").size());
  if (!allDigits(uid)) return false;
  // The manager's own uid must match the slice's: user-1000.slice/user@1000.service.
  return rel.size() == uid.size() + std::string_view(".service").size() &&
         rel.substr(0, uid.size()) == uid && rel.substr(uid.size()) == ".service";
}

std::map<CgroupPath, PolicySettings> builtinPolicyDefaults() {
  const ValueSource src = ValueSource::builtin();
  std::map<CgroupPath, PolicySettings> out;
  PolicySettings root;
  root.syncIsolation = Sourced<bool>{kDefaultRootSyncIsolation, src};
  root.boost = Sourced<BoostPermission>{kDefaultBoost, src};
  root.boostCeiling = Sourced<BoostCeiling>{BoostCeiling{}, src};
  root.maxBoost = Sourced<std::chrono::seconds>{kDefaultMaxBoost, src};
  root.boostBudget =
      Sourced<BoostBudget>{BoostBudget{kDefaultBudgetPercent, kDefaultBudgetWindow}, src};
  root.tenantSync = Sourced<TenantSync>{kDefaultTenantSync, src};
  out[CgroupPath()] = root;
  for (auto [name, on] : {std::pair{"/init.scope", true}, std::pair{"/system.slice", true},
                          std::pair{"/user.slice", false}, std::pair{"/machine.slice", false}}) {
    PolicySettings s;
    s.syncIsolation = Sourced<bool>{on, src};
    out[path(name)] = s;
  }
  return out;
}

GlobalSettings builtinGlobalSettings() {
  return GlobalSettings{};
}

}  // namespace cxiosync
