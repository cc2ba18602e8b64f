// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/model/effective_limit.h"

namespace cxiosync {

namespace {

uint64_t orMax(const std::optional<uint64_t>& v) {
  return v ? *v : kUnlimited;
}

bool finiteKey(const std::optional<uint64_t>& v) {
  return v && *v != kUnlimited;
}

const IoMaxEntry* lineFor(const IoMaxByCgroup& lines, const CgroupPath& cg, const DevNum& dev) {
  auto it = lines.find(cg);
  if (it == lines.end()) return nullptr;
  return findIoMaxEntry(it->second, dev);
}

}  // namespace

const IoMaxEntry* findIoMaxEntry(const std::vector<IoMaxEntry>& lines, const DevNum& dev) {
  for (const IoMaxEntry& e : lines) {
    if (e.dev == dev) return &e;
  }
  return nullptr;
}

IoLimits fullIoLimits(const IoLimits& l) {
  return IoLimits{orMax(l.rbps), orMax(l.wbps), orMax(l.riops), orMax(l.wiops)};
}

IoMaxEntry fullIoMaxEntry(const IoMaxEntry& entry) {
  return IoMaxEntry{entry.dev, fullIoLimits(entry.limits)};
}

bool hasFiniteWriteLimit(const IoLimits& limits) {
  return finiteKey(limits.wbps) || finiteKey(limits.wiops);
}

EffectiveWriteLimit effectiveWriteLimit(const IoMaxByCgroup& lines, const CgroupPath& cgroup,
                                        const DevNum& dev) {
  EffectiveWriteLimit eff;
  // Root first, self last: `<=` lets a nearer level take over a tie.
  for (const CgroupPath& cg : cgroup.ancestorsAndSelf()) {
    const IoMaxEntry* e = lineFor(lines, cg, dev);
    if (!e) continue;
    if (finiteKey(e->limits.wbps) && *e->limits.wbps <= eff.wbps.value) {
      eff.wbps = HeldLimit{*e->limits.wbps, cg};
    }
    if (finiteKey(e->limits.wiops) && *e->limits.wiops <= eff.wiops.value) {
      eff.wiops = HeldLimit{*e->limits.wiops, cg};
    }
  }
  return eff;
}

std::vector<LimitLayer> writeLimitLayers(const IoMaxByCgroup& lines, const CgroupPath& cgroup,
                                         const DevNum& dev) {
  std::vector<LimitLayer> out;
  for (const CgroupPath& cg : cgroup.ancestorsAndSelf()) {
    const IoMaxEntry* e = lineFor(lines, cg, dev);
    if (e && hasFiniteWriteLimit(e->limits)) out.push_back(LimitLayer{cg, *e});
  }
  return out;
}

}  // namespace cxiosync
