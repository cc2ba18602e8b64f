// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The effective write limit of a cgroup on a device: io.max limits are hierarchical, so what
// applies is the tightest of the cgroup's own line and every ancestor's, per key. A boost
// must be written where the limit sits, so the answer also names the cgroup that holds it.
// Pure: computed over whatever io.max lines the caller hands in.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "policy/formats/io_max.h"
#include "policy/model/cgroup_path.h"
#include "policy/model/dev_num.h"

namespace cxiosync {

// One key of the effective limit and the cgroup whose own io.max holds it.
struct HeldLimit {
  uint64_t value = kUnlimited;
  std::optional<CgroupPath> holder;  // nullopt when unlimited
  bool finite() const { return value != kUnlimited; }
  bool operator==(const HeldLimit&) const = default;
};

struct EffectiveWriteLimit {
  HeldLimit wbps;
  HeldLimit wiops;
  bool finite() const { return wbps.finite() || wiops.finite(); }
  bool operator==(const EffectiveWriteLimit&) const = default;
};

// A cgroup's own io.max line for one device.
struct LimitLayer {
  CgroupPath cgroup;
  IoMaxEntry entry;
  bool operator==(const LimitLayer&) const = default;
};

using IoMaxByCgroup = std::map<CgroupPath, std::vector<IoMaxEntry>>;

// The entry for `dev` in one io.max file, or nullptr.
const IoMaxEntry* findIoMaxEntry(const std::vector<IoMaxEntry>& lines, const DevNum& dev);

// All four keys present: absent keys become kUnlimited (the kernel prints all four; a line
// written back with a key missing would leave that key as it is, so originals are stored full).
IoLimits fullIoLimits(const IoLimits& limits);
IoMaxEntry fullIoMaxEntry(const IoMaxEntry& entry);

// true when wbps or wiops is present and not "max".
bool hasFiniteWriteLimit(const IoLimits& limits);

// Effective wbps/wiops of `cgroup` on `dev`: per key the minimum over the cgroup and all its
// ancestors present in `lines`. When two levels hold the same value, the holder is the one
// nearest to `cgroup` (boosting it alone would still leave the other: see writeLimitLayers).
EffectiveWriteLimit effectiveWriteLimit(const IoMaxByCgroup& lines, const CgroupPath& cgroup,
                                        const DevNum& dev);

// Every cgroup on the chain root..cgroup whose own line for `dev` carries a finite wbps or
// wiops, root first. These are the layers a full lift of `cgroup`'s writes has to touch.
std::vector<LimitLayer> writeLimitLayers(const IoMaxByCgroup& lines, const CgroupPath& cgroup,
                                         const DevNum& dev);

}  // namespace cxiosync
