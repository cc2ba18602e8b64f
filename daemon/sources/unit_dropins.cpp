// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sources/unit_dropins.h"

#include "daemon/log/logging.h"
#include "daemon/sources/config_loader.h"
#include "policy/config/dropin.h"
#include "policy/config/values.h"

namespace cxiosync {

SearchPathDropInFinder::SearchPathDropInFinder(std::string root,
                                               std::vector<std::string> searchPath)
    : root_(std::move(root)), searchPath_(std::move(searchPath)) {}

Result<std::optional<UnitDropInList>> SearchPathDropInFinder::find(const CgroupPath& cgroup) {
  std::string unit = unitForCgroupPath(cgroup);
  if (unit.empty()) return std::optional<UnitDropInList>{};
  auto files = findUnitDropIns(unit, root_, searchPath_);
  if (!files) return files.error();
  return std::optional<UnitDropInList>{UnitDropInList{std::move(unit), std::move(*files)}};
}

std::string describeDropInSettings(const PolicySettings& s) {
  std::string out;
  auto add = [&](DropInKey key, const std::string& value) {
    if (!out.empty()) out += ' ';
    out += std::string(dropInKeyName(key)) + "=" + value;
  };
  if (s.syncIsolation) add(DropInKey::SyncIsolation, formatBoolean(s.syncIsolation->value));
  if (s.boost) add(DropInKey::Boost, formatBoostPermission(s.boost->value));
  if (s.boostCeiling) add(DropInKey::BoostCeiling, formatBoostCeiling(s.boostCeiling->value));
  if (s.maxBoost) add(DropInKey::MaxBoostSec, formatSeconds(s.maxBoost->value));
  if (s.boostBudget) add(DropInKey::BoostBudget, formatBoostBudget(s.boostBudget->value));
  return out.empty() ? "nothing" : out;
}

DropInLayer::DropInLayer(std::unique_ptr<UnitDropInFinder> finder) : finder_(std::move(finder)) {}

bool DropInLayer::track(const CgroupPath& cgroup, TimePoint now) {
  if (auto it = entries_.find(cgroup.relative()); it != entries_.end()) {
    it->second.lastUsed = now;
    return false;
  }
  bool changed = false;
  for (const CgroupPath& a : cgroup.ancestorsAndSelf()) {
    auto [it, inserted] = entries_.try_emplace(a.relative());
    it->second.lastUsed = now;
    if (!inserted) continue;
    it->second.cgroup = a;
    changed = load(it->second, now) || changed;
  }
  if (changed) rebuildLayer();
  return changed;
}

bool DropInLayer::refreshAll(TimePoint now) {
  // Asked for because something changed (a file, systemd finished reloading): ask at once,
  // whatever the last failure said.
  finderDownUntil_ = TimePoint{};
  return sweep(now, true);
}

bool DropInLayer::maintain(TimePoint now) {
  return sweep(now, false);
}

bool DropInLayer::sweep(TimePoint now, bool all) {
  // An ancestor stays while any descendant is in use: its drop-ins are inherited.
  std::set<std::string> keep;
  for (const auto& [rel, e] : entries_) {
    if (now - e.lastUsed > kForgetAfter) continue;
    auto chain = e.cgroup.ancestorsAndSelf();  // root first
    for (auto a = chain.rbegin(); a != chain.rend(); ++a)
      if (!keep.insert(a->relative()).second) break;  // the rest is kept already
  }
  bool changed = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!keep.count(it->first)) {
      changed = changed || !it->second.settings.empty();
      it = entries_.erase(it);
      continue;
    }
    if (all || !it->second.loaded) changed = load(it->second, now) || changed;
    ++it;
  }
  if (changed) rebuildLayer();
  return changed;
}

bool DropInLayer::load(Entry& e, TimePoint now) {
  const CgroupPath& cgroup = e.cgroup;
  if (now < finderDownUntil_) {
    ++skipped_;
    e.loaded = false;
    return false;
  }
  auto found = finder_->find(cgroup);
  if (!found) {
    // Keep what we had (systemd may be reloading or restarting) and ask again later.
    spdlog::warn(
        "cannot look up the unit of {} ({}): {}; keeping the drop-in settings, asking again "
        "in {} s{}",
        cgroup.display(), finder_->name(), found.error().message, kFinderBackoff.count(),
        skipped_ ? fmt::format(" ({} lookups skipped meanwhile)", skipped_) : "");
    finderDownUntil_ = now + kFinderBackoff;
    skipped_ = 0;
    e.loaded = false;
    return false;
  }
  e.loaded = true;
  PolicySettings next;
  if (*found) {
    auto parsed = loadDropInFiles((*found)->files);
    if (!parsed) {
      spdlog::error(
          "ignoring the [X-CxIOSync] drop-ins of {} ({}): {}; its previous settings stay "
          "({})  action=dropin-error unit={} cgroup={}",
          (*found)->unit, cgroup.display(), parsed.error().message,
          describeDropInSettings(e.settings), logQuote((*found)->unit), logQuote(cgroup.display()));
      return false;
    }
    next = std::move(parsed->settings);
  }
  const bool changed = !(next == e.settings);
  if (changed) {
    const std::string unit = *found ? (*found)->unit : std::string("(no unit)");
    std::string sources;
    for (const auto& f : *found ? (*found)->files : std::vector<std::string>{})
      sources += (sources.empty() ? "" : ", ") + f;
    spdlog::info("drop-in policy of {} ({}): {}{}  action=dropin unit={} cgroup={}", unit,
                 cgroup.display(), describeDropInSettings(next),
                 sources.empty() ? "" : " from " + sources, logQuote(unit),
                 logQuote(cgroup.display()));
  }
  e.settings = std::move(next);
  return changed;
}

void DropInLayer::rebuildLayer() {
  layer_.clear();
  for (const auto& [rel, e] : entries_)
    if (!e.settings.empty()) layer_.emplace(e.cgroup, e.settings);
}

}  // namespace cxiosync
