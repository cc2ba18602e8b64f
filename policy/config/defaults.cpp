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

std::optional<uint32_t> builtinTenantOwner(const CgroupPath& cgroup) {
  constexpr std::string_view kUserSlice = "user.slice/user-";
  std::string_view rel = cgroup.relative();
  if (rel.substr(0, kUserSlice.size()) != kUserSlice) return std::nullopt;
  rel.remove_prefix(kUserSlice.size());
  const size_t dot = rel.find(".slice");
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view uid = rel.substr(0, dot);
  if (!allDigits(uid)) return std::nullopt;
  uint64_t n = 0;
  for (char c : uid) n = n * 10 + uint64_t(c - '0');
  if (n > UINT32_MAX) return std::nullopt;
  rel.remove_prefix(dot + std::string_view(".slice").size());
  if (rel.empty()) return uint32_t(n);  // /user.slice/user-N.slice
  // The manager's own uid must match the slice's: user-1000.slice/user@1000.service.
  constexpr std::string_view kManager = "/user@";
  if (rel.substr(0, kManager.size()) != kManager) return std::nullopt;
  rel.remove_prefix(kManager.size());
  if (rel.size() == uid.size() + std::string_view(".service").size() &&
      rel.substr(0, uid.size()) == uid && rel.substr(uid.size()) == ".service") {
    return uint32_t(n);
  }
  return std::nullopt;
}

bool isBuiltinTenant(const CgroupPath& cgroup) {
  return builtinTenantOwner(cgroup).has_value();
}

bool rootSyncIsolatedByDefault(const CgroupPath& syncerCgroup) {
  const std::string_view rel = syncerCgroup.relative();
  constexpr std::string_view kUser = "user.slice";
  return rel.substr(0, kUser.size()) == kUser &&
         (rel.size() == kUser.size() || rel[kUser.size()] == '/');
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
