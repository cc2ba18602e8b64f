// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/defaults.h"

namespace cxiosync {

namespace {
CgroupPath path(std::string_view text) {
  auto p = CgroupPath::parse(text);
  return p ? *p : CgroupPath();
}
}  // namespace

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
