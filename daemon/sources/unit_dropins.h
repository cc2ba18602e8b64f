// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The drop-in policy layer: [X-CxIOSync] sections of systemd unit drop-ins
// (/etc/systemd/system/backup.slice.d/70-cxiosync.conf), per cgroup, for the resolver
// (policy/config/resolver.h, PolicyLayers::dropIn).
//
// Which unit owns a cgroup and which drop-in files apply, in which order, is systemd's answer
// where systemd runs (daemon/sources/systemd_dropins.h: GetUnitByControlGroup + DropInPaths), and
// the standard-conf precedence below a root otherwise (SearchPathDropInFinder). Files are read and
// parsed here (daemon/sources/config_loader.h); the parsing itself is pure
// (policy/config/dropin.h).
//
// Loaded lazily: a cgroup's drop-ins are looked up the first time the daemon needs its policy
// (it shows up in a snapshot, or `cxiosyncctl show` asks), then kept until refreshAll() (a
// drop-in file changed, systemd reloaded, SIGHUP) or until the cgroup has not been needed for
// kForgetAfter. Synchronous file and D-Bus I/O: bounded by what the finder allows, and done only
// for cgroups not seen before.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policy/config/knobs.h"
#include "policy/model/cgroup_path.h"
#include "policy/model/snapshot.h"
#include "policy/result.h"

namespace cxiosync {

// The unit that owns exactly one cgroup, and its drop-in files in the order systemd applies them.
struct UnitDropInList {
  std::string unit;                // "backup.slice"
  std::vector<std::string> files;  // every drop-in, [X-CxIOSync] or not
};

class UnitDropInFinder {
 public:
  virtual ~UnitDropInFinder() = default;
  virtual std::string_view name() const = 0;  // for logs: "systemd", "search path"
  // nullopt: no unit owns exactly this cgroup (a delegated subtree, a cgroup made by hand).
  // An error means "could not ask now": the caller keeps what it had and asks again later.
  virtual Result<std::optional<UnitDropInList>> find(const CgroupPath& cgroup) = 0;
};

// Without systemd: the unit is named from the cgroup path (unitForCgroupPath) and its drop-ins
// are found below `root` with systemd's standard-conf precedence (findUnitDropIns).
class SearchPathDropInFinder final : public UnitDropInFinder {
 public:
  SearchPathDropInFinder(std::string root, std::vector<std::string> searchPath);
  std::string_view name() const override { return "search path"; }
  Result<std::optional<UnitDropInList>> find(const CgroupPath& cgroup) override;

 private:
  std::string root_;
  std::vector<std::string> searchPath_;
};

class DropInLayer {
 public:
  // A cgroup not needed for this long is forgotten (transient scopes come and go).
  static constexpr std::chrono::minutes kForgetAfter{10};
  // After a failed lookup (systemd reloading, restarting) nothing is asked for this long.
  static constexpr std::chrono::seconds kFinderBackoff{5};

  explicit DropInLayer(std::unique_ptr<UnitDropInFinder> finder);

  // Makes sure `cgroup` and its ancestors are loaded; returns true if the layer changed.
  // One hash lookup for a cgroup seen before (called for every cgroup of every snapshot).
  bool track(const CgroupPath& cgroup, TimePoint now);
  // Re-reads every loaded cgroup's unit and files (and forgets those unused for kForgetAfter,
  // with neither a descendant used in that time).
  // Returns true if the layer changed. A unit whose files fail to parse keeps its previous
  // settings; the error is logged with FILE:LINE. Ends a back-off (kFinderBackoff): the caller
  // knows something changed, e.g. systemd finished reloading.
  bool refreshAll(TimePoint now);
  // Periodic upkeep: forgets cgroups unused for kForgetAfter and asks again for those whose
  // lookup failed. Returns true if the layer changed.
  bool maintain(TimePoint now);

  // cgroup -> settings, for PolicyLayers::dropIn. Only cgroups whose drop-ins set something.
  const std::map<CgroupPath, PolicySettings>& layer() const { return layer_; }

 private:
  struct Entry {
    CgroupPath cgroup;
    PolicySettings settings;
    TimePoint lastUsed{};
    bool loaded = false;  // false: the finder failed; ask again at the next refreshAll()
  };
  // Looks `cgroup` up again; true if its settings changed.
  bool load(Entry& e, TimePoint now);
  // Forgets stale entries; reloads all (or only those whose lookup failed).
  bool sweep(TimePoint now, bool all);
  void rebuildLayer();

  std::unique_ptr<UnitDropInFinder> finder_;
  std::unordered_map<std::string, Entry> entries_;  // key: CgroupPath::relative()
  std::map<CgroupPath, PolicySettings> layer_;
  // After a failed lookup the finder is not asked again before this (each question to a
  // reloading systemd waits for the call timeout).
  TimePoint finderDownUntil_{};
  size_t skipped_ = 0;  // lookups skipped since the failure, for the log
};

// "Boost=allow MaxBoostSec=30s" (drop-in key spelling), for logs.
std::string describeDropInSettings(const PolicySettings& settings);

}  // namespace cxiosync
