#include "policy/planner/planner.h"

#include <algorithm>
#include <string_view>
#include <tuple>

#include "policy/model/effective_limit.h"

namespace cxiosync {

namespace {

using std::chrono::nanoseconds;
using std::chrono::seconds;

// The knobs the planner reads, without the provenance strings.
struct Knobs {
  bool isolation = false;
  bool allow = false;
  BoostCeiling ceiling;
  seconds maxBoost{0};
  BoostBudget budget;
};

Knobs knobsOf(const EffectivePolicy& p) {
  return Knobs{p.syncIsolation.value, p.boost.value == BoostPermission::Allow, p.boostCeiling.value,
               p.maxBoost.value, p.boostBudget.value};
}

// Calls f(prefix) for the root, every ancestor and `rel` itself, root first.
template <class F>
void forEachAncestorOrSelf(std::string_view rel, F&& f) {
  f(std::string_view());
  if (rel.empty()) return;
  for (size_t i = 0; i < rel.size(); ++i) {
    if (rel[i] == '/') f(rel.substr(0, i));
  }
  f(rel);
}

uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fingerprint(uint64_t holderHash, const DevNum& dev, RefuseReason why) {
  return mix(holderHash ^ mix((uint64_t(dev.major) << 32) | dev.minor) ^
             (uint64_t(why) + 1) * 0x100000001b3ull);
}

// file_dirty + file_writeback, saturating (the values come from text the kernel wrote).
uint64_t dirtyBytes(const CgroupState& st) {
  const uint64_t sum = st.fileDirty + st.fileWriteback;
  return sum < st.fileDirty ? UINT64_MAX : sum;
}

std::string fmtLimit(uint64_t v) {
  return v == kUnlimited ? "max" : std::to_string(v);
}
std::string fmtLimit(const std::optional<uint64_t>& v) {
  return fmtLimit(v ? *v : kUnlimited);
}

std::string fmtBytes(uint64_t b) {
  if (b >= (1ull << 20)) {
    uint64_t tenths = b * 10 / (1ull << 20);
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " MiB";
  }
  return std::to_string(b) + " B";
}

std::string fmtSeconds(nanoseconds d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return std::to_string(ms / 1000) + "." + std::to_string((ms % 1000) / 100) + "s";
}

// "wbps 1048576 -> max, wiops 100 -> max": the keys that change.
std::string limitChange(const IoLimits& from, const IoLimits& to) {
  std::string out;
  auto key = [&](const char* name, const std::optional<uint64_t>& a,
                 const std::optional<uint64_t>& b) {
    if (a == b) return;
    if (!out.empty()) out += ", ";
    out += name;
    out += ' ';
    out += fmtLimit(a);
    out += " -> ";
    out += fmtLimit(b);
  };
  key("rbps", from.rbps, to.rbps);
  key("wbps", from.wbps, to.wbps);
  key("riops", from.riops, to.riops);
  key("wiops", from.wiops, to.wiops);
  return out.empty() ? "no change" : out;
}

std::string describeSyncer(const Syncer& s) {
  return std::string(syncSyscallName(s.syscall)) + " by " + std::to_string(s.pid) + "/" +
         std::to_string(s.tid) + " '" + s.comm + "' in " + s.cgroup.display();
}

std::string describeCeiling(const BoostCeiling& c) {
  switch (c.kind) {
    case BoostCeiling::Kind::Inherit:
      return "inherit";
    case BoostCeiling::Kind::Max:
      return "max";
    case BoostCeiling::Kind::Bytes:
      return std::to_string(c.bytesPerSecond) + " B/s";
  }
  return "?";
}

// The boosted line: per key never lower than the original; rbps/riops untouched.
IoLimits raise(const IoLimits& orig, uint64_t ceilW, uint64_t ceilI) {
  IoLimits out = orig;
  out.wbps = std::max(orig.wbps.value_or(kUnlimited), ceilW);
  out.wiops = std::max(orig.wiops.value_or(kUnlimited), ceilI);
  return out;
}

IoLimits maxOf(const IoLimits& a, const IoLimits& b) {
  auto m = [](const std::optional<uint64_t>& x, const std::optional<uint64_t>& y) {
    return std::optional<uint64_t>(std::max(x.value_or(kUnlimited), y.value_or(kUnlimited)));
  };
  return IoLimits{m(a.rbps, b.rbps), m(a.wbps, b.wbps), m(a.riops, b.riops), m(a.wiops, b.wiops)};
}

int decisionRank(const Decision& d) {
  if (std::holds_alternative<RestoreBoost>(d)) return 0;
  if (std::holds_alternative<UpdateBoost>(d)) return 1;
  if (std::holds_alternative<StartBoost>(d)) return 2;
  return 3;
}

constexpr nanoseconds kMinWakeup = std::chrono::milliseconds(10);

}  // namespace

nanoseconds PlannerState::usedWithin(const CgroupPath& cgroup, TimePoint now,
                                     seconds window) const {
  auto it = usage.find(cgroup);
  if (it == usage.end()) return nanoseconds(0);
  const TimePoint from = now - window;
  nanoseconds used(0);
  for (const Interval& iv : it->second.closed) {
    TimePoint b = std::max(iv.begin, from);
    TimePoint e = std::min(iv.end, now);
    if (e > b) used += e - b;
  }
  if (it->second.openSince) {
    TimePoint b = std::max(*it->second.openSince, from);
    if (now > b) used += now - b;
  }
  return used;
}

TimePoint PlannerState::budgetFreesAt(const CgroupPath& cgroup, TimePoint now, seconds window,
                                      nanoseconds allowed) const {
  auto it = usage.find(cgroup);
  if (it == usage.end()) return now;
  const HolderUsage& u = it->second;
  const nanoseconds used = usedWithin(cgroup, now, window);
  if (used < allowed) return now;
  if (u.openSince) return now + (used - allowed) + nanoseconds(1);  // still growing: estimate
  // Slide the window start x forward from now - window; coverage shrinks only while x is
  // inside a closed interval. Find where it first drops below `allowed`.
  nanoseconds excess = used - allowed;
  TimePoint x = now - window;
  for (const Interval& iv : u.closed) {
    if (iv.end <= x) continue;
    const TimePoint segStart = std::max(iv.begin, x);
    const nanoseconds seg = iv.end - segStart;
    if (seg > excess) return segStart + excess + nanoseconds(1) + window;
    excess -= seg;
    x = iv.end;
  }
  return x + window;
}

// ---------------------------------------------------------------------------------------------

struct Planner::Scratch {
  // A finite write limit as the planner sees it: the snapshot's line, or for a boosted pair
  // the recorded original (io.max shows our boosted value, or no line when boosted to max).
  struct Lim {
    uint32_t cg = 0;
    DevNum dev;
    IoMaxEntry orig;       // all four keys
    int32_t active = -1;   // index into `active`
    int32_t dirtier = -1;  // heuristic: deepest dirty cgroup below (or at) the holder
    // Deepest cgroup below (or at) the holder with file_writeback >= min_dirty_bytes: writeback
    // already in flight when a sync starts is not named by writeback_queue (only wbs with dirty
    // inodes are), yet sync() waits for it (wait_sb_inodes).
    int32_t inflight = -1;
    uint64_t holderHash = 0;
  };
  struct SyncerInfo {
    const Syncer* s = nullptr;
    SyncerId id;
    Knobs pol;
    bool heuristic = true;                              // no waitsOn: use the memory.stat heuristic
    bool allDevices = true;                             // sync, or target unknown
    std::vector<DevNum> devices;                        // otherwise: target + below
    std::vector<std::pair<DevNum, IoLimits>> effCache;  // own effective write limit per device
    std::unordered_set<uint64_t>* reported = nullptr;
    bool isolationOffSaid = false;
    std::vector<uint32_t> ancestors;  // indices of its cgroup and ancestors present in `cgs`
    uint32_t servedStamp = 0;         // == current pair stamp: already served by that boost
  };
  struct WaitRef {
    uint32_t lim;
    uint32_t syncer;
    int32_t dirtier;
    bool belowMin;
  };
  struct Wanter {
    uint32_t syncer;
    IoLimits proposed;
    int32_t dirtier;
  };

  std::vector<const std::pair<const CgroupPath, CgroupState>*> cgs;
  std::vector<Lim> lims;
  std::vector<uint32_t> limBegin;
  std::vector<std::pair<std::pair<uint32_t, DevNum>, uint32_t>> activeByCg;
  std::vector<int32_t> activeCg;
  std::vector<SyncerInfo> syncers;
  std::vector<uint32_t> heuristicSyncers;
  std::vector<std::pair<int64_t, uint32_t>> byTid;
  std::vector<std::pair<uint64_t, uint32_t>> byInode;
  bool inodesFresh = false;
  std::vector<WaitRef> waits;
  std::vector<Wanter> wanters;
  std::vector<int64_t> served;
  std::vector<int32_t> holderPol;  // index into `knobs`, -1: not looked up yet
  std::vector<Knobs> knobs;
  std::vector<std::pair<uint32_t, SyncerId>> spentIdx;        // (lim, syncer id), sorted
  std::vector<std::pair<uint32_t, TimePoint>> activeHolders;  // (cg, earliest start)
  std::vector<SyncerId> present;
  std::vector<Decision> out;

  int32_t findCg(std::string_view rel) const {
    auto it = std::lower_bound(cgs.begin(), cgs.end(), rel, [](const auto* e, std::string_view r) {
      return std::string_view(e->first.relative()) < r;
    });
    if (it == cgs.end() || std::string_view((*it)->first.relative()) != rel) return -1;
    return int32_t(it - cgs.begin());
  }
  int32_t findLim(uint32_t cg, const DevNum& dev) const {
    for (uint32_t i = limBegin[cg]; i < limBegin[cg + 1]; ++i) {
      if (lims[i].dev == dev) return int32_t(i);
    }
    return -1;
  }
  const CgroupPath& path(uint32_t cg) const { return cgs[cg]->first; }
  const CgroupState& cgState(uint32_t cg) const { return cgs[cg]->second; }
};

Planner::Planner() : scratch_(std::make_unique<Scratch>()) {}
Planner::Planner(PlannerState state)
    : state_(std::move(state)), scratch_(std::make_unique<Scratch>()) {}
Planner::~Planner() = default;
Planner::Planner(const Planner& o) : state_(o.state_), scratch_(std::make_unique<Scratch>()) {}
Planner& Planner::operator=(const Planner& o) {
  state_ = o.state_;
  return *this;
}
Planner::Planner(Planner&&) noexcept = default;
Planner& Planner::operator=(Planner&&) noexcept = default;

std::vector<Decision> planRestoreAll(const std::vector<ActiveBoost>& active, EndReason why) {
  std::vector<Decision> out;
  for (const ActiveBoost& b : active) {
    if (b.shutdownLift) continue;
    out.push_back(RestoreBoost{b.cgroup, b.device, b.boosted, b.original, why});
  }
  return out;
}

PlanResult Planner::step(const Snapshot& snap, const std::vector<ActiveBoost>& active,
                         const PolicyLookup& policy, const GlobalSettings& settings,
                         bool shuttingDown) {
  if (!scratch_) scratch_ = std::make_unique<Scratch>();
  Scratch& s = *scratch_;
  const TimePoint now = snap.now;
  const bool liftAll = shuttingDown && settings.liftOnShutdown;
  std::optional<TimePoint> wakeup;
  auto wakeAt = [&](TimePoint t) {
    if (t < now + kMinWakeup) t = now + kMinWakeup;
    if (!wakeup || t < *wakeup) wakeup = t;
  };
  s.out.clear();

  // 0. Cgroups in path order (the map's order) for prefix lookups without allocation.
  s.cgs.clear();
  s.cgs.reserve(snap.cgroups.size());
  for (const auto& kv : snap.cgroups) s.cgs.push_back(&kv);
  const uint32_t nCg = uint32_t(s.cgs.size());

  // 1. Active boosts by cgroup index.
  s.activeCg.assign(active.size(), -1);
  s.activeByCg.clear();
  for (size_t i = 0; i < active.size(); ++i) {
    int32_t cg = s.findCg(active[i].cgroup.relative());
    s.activeCg[i] = cg;
    if (cg >= 0) s.activeByCg.push_back({{uint32_t(cg), active[i].device}, uint32_t(i)});
  }
  std::sort(s.activeByCg.begin(), s.activeByCg.end());

  // 2. Finite write limits per cgroup, boosted pairs seen through their recorded original.
  s.lims.clear();
  s.limBegin.assign(nCg + 1, 0);
  {
    size_t ai = 0;
    for (uint32_t c = 0; c < nCg; ++c) {
      s.limBegin[c] = uint32_t(s.lims.size());
      size_t aBegin = ai;
      while (ai < s.activeByCg.size() && s.activeByCg[ai].first.first == c) ++ai;
      for (const IoMaxEntry& e : s.cgState(c).ioMax) {
        bool boosted = false;
        for (size_t k = aBegin; k < ai; ++k) boosted |= s.activeByCg[k].first.second == e.dev;
        if (boosted || !hasFiniteWriteLimit(e.limits)) continue;
        Scratch::Lim lim;
        lim.cg = c;
        lim.dev = e.dev;
        lim.orig = fullIoMaxEntry(e);
        s.lims.push_back(std::move(lim));
      }
      for (size_t k = aBegin; k < ai; ++k) {
        const ActiveBoost& b = active[s.activeByCg[k].second];
        if (k > aBegin && s.activeByCg[k - 1].first == s.activeByCg[k].first) continue;  // dup
        Scratch::Lim lim;
        lim.cg = c;
        lim.dev = b.device;
        lim.orig = fullIoMaxEntry(b.original);
        lim.orig.dev = b.device;
        lim.active = int32_t(s.activeByCg[k].second);
        s.lims.push_back(std::move(lim));
      }
      std::sort(s.lims.begin() + s.limBegin[c], s.lims.end(),
                [](const Scratch::Lim& a, const Scratch::Lim& b) { return a.dev < b.dev; });
    }
    s.limBegin[nCg] = uint32_t(s.lims.size());
  }

  // Policy of a holder, once per step.
  s.holderPol.assign(nCg, -1);
  s.knobs.clear();
  auto holderKnobs = [&](uint32_t cg) -> const Knobs& {
    int32_t& slot = s.holderPol[cg];
    if (slot < 0) {
      slot = int32_t(s.knobs.size());
      s.knobs.push_back(knobsOf(policy(s.path(cg))));
    }
    return s.knobs[size_t(slot)];
  };
  auto holderHash = [&](Scratch::Lim& L) {
    if (!L.holderHash) L.holderHash = mix(std::hash<std::string>()(s.path(L.cg).relative())) | 1;
    return L.holderHash;
  };

  // 3. Budget accounting from what is actually in force. Both lists are in path order:
  // merge them instead of looking paths up.
  s.activeHolders.clear();
  for (const auto& [key, idx] : s.activeByCg) {
    const ActiveBoost& b = active[idx];
    if (b.shutdownLift) continue;
    if (!s.activeHolders.empty() && s.activeHolders.back().first == key.first) {
      s.activeHolders.back().second = std::min(s.activeHolders.back().second, b.started);
    } else {
      s.activeHolders.push_back({key.first, b.started});
    }
  }
  {
    auto trim = [&](PlannerState::HolderUsage& u, uint32_t cg) {
      const seconds window = holderKnobs(cg).budget.window;
      auto keepFrom =
          std::find_if(u.closed.begin(), u.closed.end(),
                       [&](const PlannerState::Interval& iv) { return iv.end > now - window; });
      u.closed.erase(u.closed.begin(), keepFrom);
    };
    auto it = state_.usage.begin();
    size_t k = 0;
    while (it != state_.usage.end() || k < s.activeHolders.size()) {
      int cmp = 0;
      if (it == state_.usage.end()) {
        cmp = 1;
      } else if (k == s.activeHolders.size()) {
        cmp = -1;
      } else {
        cmp = it->first.relative().compare(s.path(s.activeHolders[k].first).relative());
      }
      if (cmp > 0) {  // boosted, no history yet
        const auto& [cg, started] = s.activeHolders[k++];
        auto& u = state_.usage.emplace_hint(it, s.path(cg), PlannerState::HolderUsage{})->second;
        u.openSince = std::min(started, now);
        u.lastSeenActive = now;
        continue;
      }
      auto& u = it->second;
      if (cmp == 0) {  // boosted now
        const auto& [cg, started] = s.activeHolders[k++];
        TimePoint begin = std::min(started, now);
        if (!u.closed.empty()) begin = std::max(begin, u.closed.back().end);
        u.openSince = u.openSince ? std::min(*u.openSince, begin) : begin;
        u.lastSeenActive = now;
        trim(u, cg);
        ++it;
        continue;
      }
      // not boosted now: close the open interval at the last step that saw it in force
      if (u.openSince) {
        if (u.lastSeenActive > *u.openSince) u.closed.push_back({*u.openSince, u.lastSeenActive});
        u.openSince.reset();
      }
      int32_t cg = s.findCg(it->first.relative());
      if (cg >= 0) trim(u, uint32_t(cg));
      if (cg < 0 || u.closed.empty()) {  // gone cgroups take their history with them
        it = state_.usage.erase(it);
      } else {
        ++it;
      }
    }
  }
  auto budgetExhausted = [&](uint32_t cg, bool boostedNow) {
    const Knobs& k = holderKnobs(cg);
    if (k.budget.percent >= 100 || k.budget.window.count() <= 0) return false;
    const nanoseconds allowed = nanoseconds(k.budget.window) * k.budget.percent / 100;
    const nanoseconds used = state_.usedWithin(s.path(cg), now, k.budget.window);
    if (used < allowed) {
      if (boostedNow) wakeAt(now + (allowed - used));
      return false;
    }
    if (!boostedNow) wakeAt(state_.budgetFreesAt(s.path(cg), now, k.budget.window, allowed));
    return true;
  };

  // 4. Syncers present now, stable order (earliest first), and their state.
  s.present.clear();
  for (const Syncer& sy : snap.syncers) s.present.push_back(SyncerId{sy.tid, sy.since});
  if (liftAll) s.present.push_back(SyncerId{0, TimePoint{}});
  std::sort(s.present.begin(), s.present.end());
  for (auto it = state_.reported.begin(); it != state_.reported.end();) {
    if (std::binary_search(s.present.begin(), s.present.end(), it->first)) {
      ++it;
    } else {
      it = state_.reported.erase(it);
    }
  }
  for (auto it = state_.spent.begin(); it != state_.spent.end();) {
    auto& v = it->second;
    v.erase(std::remove_if(v.begin(), v.end(),
                           [&](const SyncerId& id) {
                             return !std::binary_search(s.present.begin(), s.present.end(), id);
                           }),
            v.end());
    it = v.empty() ? state_.spent.erase(it) : std::next(it);
  }
  s.spentIdx.clear();
  for (const auto& [key, ids] : state_.spent) {
    int32_t cg = s.findCg(key.cgroup.relative());
    if (cg < 0) continue;
    int32_t li = s.findLim(uint32_t(cg), key.device);
    if (li < 0) continue;
    for (const SyncerId& id : ids) s.spentIdx.push_back({uint32_t(li), id});
  }
  std::sort(s.spentIdx.begin(), s.spentIdx.end());

  // Emits a refusal once per sync call and (holder, device, reason).
  auto refuse = [&](std::unordered_set<uint64_t>*& reported, const SyncerId& id, uint64_t fp,
                    auto&& make) {
    if (!reported) reported = &state_.reported[id];
    if (!reported->insert(fp).second) return;
    s.out.push_back(make());
  };

  // 5. Shutdown: lift every boostable limit, nothing else.
  if (liftAll) {
    Syncer shutdownSyncer;
    shutdownSyncer.comm = "(shutdown)";
    shutdownSyncer.since = now;
    const SyncerId sid{0, TimePoint{}};
    std::unordered_set<uint64_t>* reported = nullptr;
    for (uint32_t li = 0; li < s.lims.size(); ++li) {
      Scratch::Lim& L = s.lims[li];
      const ActiveBoost* b = L.active >= 0 ? &active[size_t(L.active)] : nullptr;
      if (b && b->shutdownLift) continue;
      const Knobs& k = holderKnobs(L.cg);
      const CgroupPath& holder = s.path(L.cg);
      if (b) {
        // An ordinary boost ends here; the lift (if any) starts on the next step from what
        // io.max then really holds (the restore is compare-and-restore and may keep a value
        // someone else wrote, so the original cannot be predicted).
        s.out.push_back(RestoreBoost{b->cgroup, b->device, b->boosted, b->original,
                                     k.allow ? EndReason::Shutdown : EndReason::PolicyChanged});
        wakeAt(now);
        continue;
      }
      if (!k.allow) {
        refuse(reported, sid, fingerprint(holderHash(L), L.dev, RefuseReason::BoostDenied), [&] {
          return Refuse{holder,
                        holder,
                        L.dev,
                        shutdownSyncer,
                        RefuseReason::BoostDenied,
                        "shutdown: boost is deny on " + holder.display() + ": not lifted"};
        });
        continue;
      }
      const bool bytes = k.ceiling.kind == BoostCeiling::Kind::Bytes;
      const IoLimits lifted =
          raise(L.orig.limits, bytes ? k.ceiling.bytesPerSecond : kUnlimited, kUnlimited);
      if (lifted == L.orig.limits) continue;
      if (settings.dryRun) {
        refuse(reported, sid, fingerprint(holderHash(L), L.dev, RefuseReason::DryRun), [&] {
          return Refuse{holder,
                        holder,
                        L.dev,
                        shutdownSyncer,
                        RefuseReason::DryRun,
                        "dry run: shutdown would lift " + holder.display() + " on " + L.dev.str() +
                            ": " + limitChange(L.orig.limits, lifted)};
        });
        continue;
      }
      StartBoost d;
      d.cgroup = holder;
      d.dirtier = holder;
      d.device = L.dev;
      d.original = L.orig;
      d.boosted = IoMaxEntry{L.dev, lifted};
      d.trigger = shutdownSyncer;
      d.shutdownLift = true;
      d.reason = "shutdown: lift " + holder.display() + " on " + L.dev.str() + ": " +
                 limitChange(L.orig.limits, lifted) + " for the final sync";
      s.out.push_back(std::move(d));
    }
  } else {
    // 6. Syncer preparation.
    s.syncers.clear();
    s.heuristicSyncers.clear();
    s.byTid.clear();
    {
      std::vector<const Syncer*> order;
      order.reserve(snap.syncers.size());
      for (const Syncer& sy : snap.syncers) order.push_back(&sy);
      std::sort(order.begin(), order.end(), [](const Syncer* a, const Syncer* b) {
        return std::tie(a->since, a->tid) < std::tie(b->since, b->tid);
      });
      s.syncers.resize(order.size());
      for (size_t i = 0; i < order.size(); ++i) {
        Scratch::SyncerInfo& si = s.syncers[i];
        si.devices.clear();  // keep capacities: steps stay allocation-poor
        si.effCache.clear();
        si.ancestors.clear();
        si.reported = nullptr;
        si.isolationOffSaid = false;
        si.allDevices = true;
        si.servedStamp = 0;
        si.s = order[i];
        forEachAncestorOrSelf(order[i]->cgroup.relative(), [&](std::string_view p) {
          int32_t c = s.findCg(p);
          if (c >= 0) si.ancestors.push_back(uint32_t(c));
        });
        si.id = SyncerId{order[i]->tid, order[i]->since};
        si.pol = knobsOf(policy(order[i]->cgroup));
        si.heuristic = order[i]->waitsOn.empty();
        if (order[i]->syscall != SyncSyscall::Sync && order[i]->targetDevice) {
          si.allDevices = false;
          si.devices.push_back(*order[i]->targetDevice);
          for (const DevNum& d : snap.devices.below(*order[i]->targetDevice)) {
            si.devices.push_back(d);
          }
          std::sort(si.devices.begin(), si.devices.end());
        }
        auto rep = state_.reported.find(si.id);
        if (rep != state_.reported.end()) si.reported = &rep->second;
        if (si.heuristic) s.heuristicSyncers.push_back(uint32_t(i));
        s.byTid.push_back({order[i]->tid, uint32_t(i)});
      }
      std::sort(s.byTid.begin(), s.byTid.end());
    }
    auto syncerByTid = [&](int64_t tid) -> int32_t {
      auto it =
          std::lower_bound(s.byTid.begin(), s.byTid.end(), std::pair<int64_t, uint32_t>{tid, 0});
      return (it != s.byTid.end() && it->first == tid) ? int32_t(it->second) : -1;
    };
    // The syncer's own effective write limit on `dev` (for boost_ceiling: inherit).
    auto ownLimit = [&](Scratch::SyncerInfo& si, const DevNum& dev) -> const IoLimits& {
      for (const auto& [d, l] : si.effCache) {
        if (d == dev) return l;
      }
      IoLimits eff{kUnlimited, kUnlimited, kUnlimited, kUnlimited};
      forEachAncestorOrSelf(si.s->cgroup.relative(), [&](std::string_view p) {
        int32_t cg = s.findCg(p);
        if (cg < 0) return;
        int32_t li = s.findLim(uint32_t(cg), dev);
        if (li < 0) return;
        const IoLimits& l = s.lims[size_t(li)].orig.limits;
        eff.wbps = std::min(*eff.wbps, l.wbps.value_or(kUnlimited));
        eff.wiops = std::min(*eff.wiops, l.wiops.value_or(kUnlimited));
      });
      si.effCache.push_back({dev, eff});
      return si.effCache.back().second;
    };
    auto relevant = [](const Scratch::SyncerInfo& si, const DevNum& dev) {
      return si.allDevices || std::binary_search(si.devices.begin(), si.devices.end(), dev);
    };
    // Holders are always in `cgs`, so "outside the holder's subtree" is an index test.
    auto foreignTo = [&](const Scratch::SyncerInfo& si, uint32_t holderCg) {
      return std::find(si.ancestors.begin(), si.ancestors.end(), holderCg) == si.ancestors.end();
    };

    // 7. Dirtiers by the memory.stat heuristic: for syncers without waitsOn, and writeback in
    // flight for those with it.
    const bool anyNamed = s.heuristicSyncers.size() < s.syncers.size();
    if (!s.syncers.empty() && !s.lims.empty()) {
      const bool wantDirty = !s.heuristicSyncers.empty();
      for (uint32_t c = 0; c < nCg; ++c) {
        const CgroupState& st = s.cgState(c);
        const bool dirty = wantDirty && dirtyBytes(st) >= settings.minDirtyBytes;
        const bool inflight = anyNamed && st.fileWriteback >= settings.minDirtyBytes;
        if (!dirty && !inflight) continue;
        forEachAncestorOrSelf(s.path(c).relative(), [&](std::string_view p) {
          int32_t h = s.findCg(p);
          if (h < 0) return;
          for (uint32_t li = s.limBegin[size_t(h)]; li < s.limBegin[size_t(h) + 1]; ++li) {
            // Deepest cgroup wins (memory.stat is hierarchical: ancestors include it).
            auto deepest = [&](int32_t& d) {
              if (d < 0 || s.path(uint32_t(d)).relative().size() < s.path(c).relative().size())
                d = int32_t(c);
            };
            if (dirty) deepest(s.lims[li].dirtier);
            if (inflight) deepest(s.lims[li].inflight);
          }
        });
      }
    }

    // 8. Dirtiers named by the kernel (tracefs writeback_queue reason=sync).
    s.waits.clear();
    bool anyWaits = false;
    for (const auto& si : s.syncers) anyWaits |= !si.heuristic;
    if (anyWaits) {
      // Inode index, kept across steps and rebuilt only when a lookup finds it stale.
      auto rebuildInodes = [&] {
        s.byInode.clear();
        for (uint32_t c = 0; c < nCg; ++c) s.byInode.push_back({s.cgState(c).inode, c});
        std::sort(s.byInode.begin(), s.byInode.end());
        s.inodesFresh = true;
      };
      s.inodesFresh = false;
      if (s.byInode.size() != nCg) rebuildInodes();
      auto cgByInode = [&](uint64_t ino) -> int32_t {
        for (int attempt = 0; attempt < 2; ++attempt) {
          auto it = std::lower_bound(s.byInode.begin(), s.byInode.end(),
                                     std::pair<uint64_t, uint32_t>{ino, 0});
          if (it != s.byInode.end() && it->first == ino && it->second < nCg &&
              s.cgState(it->second).inode == ino) {
            return int32_t(it->second);
          }
          if (s.inodesFresh) return -1;
          rebuildInodes();
        }
        return -1;
      };
      for (uint32_t i = 0; i < s.syncers.size(); ++i) {
        for (const auto& [ino, bdi] : s.syncers[i].s->waitsOn) {
          const int32_t found = cgByInode(ino);
          if (found < 0) continue;  // not a cgroup we know
          const uint32_t c = uint32_t(found);
          const CgroupState& st = s.cgState(c);
          const bool belowMin = dirtyBytes(st) < settings.minDirtyBytes;
          auto devs = snap.devices.below(bdi);
          devs.push_back(bdi);
          forEachAncestorOrSelf(s.path(c).relative(), [&](std::string_view p) {
            int32_t h = s.findCg(p);
            if (h < 0) return;
            for (uint32_t li = s.limBegin[size_t(h)]; li < s.limBegin[size_t(h) + 1]; ++li) {
              if (std::find(devs.begin(), devs.end(), s.lims[li].dev) == devs.end()) continue;
              s.waits.push_back({li, i, int32_t(c), belowMin});
            }
          });
        }
      }
      // One entry per (limit, syncer): prefer one that is not below min_dirty_bytes.
      std::sort(s.waits.begin(), s.waits.end(), [](const auto& a, const auto& b) {
        return std::tie(a.lim, a.syncer, a.belowMin) < std::tie(b.lim, b.syncer, b.belowMin);
      });
      s.waits.erase(std::unique(s.waits.begin(), s.waits.end(),
                                [](const auto& a, const auto& b) {
                                  return a.lim == b.lim && a.syncer == b.syncer;
                                }),
                    s.waits.end());
    }

    // 9. Every limit, pair by pair: active boosts first, then new ones.
    size_t wi = 0;
    for (uint32_t li = 0; li < s.lims.size(); ++li) {
      Scratch::Lim& L = s.lims[li];
      const size_t wBegin = wi;
      while (wi < s.waits.size() && s.waits[wi].lim == li) ++wi;
      const ActiveBoost* b = L.active >= 0 ? &active[size_t(L.active)] : nullptr;
      if (b && b->shutdownLift) continue;  // never touched by the planner
      if (!b && L.dirtier < 0 && L.inflight < 0 && wBegin == wi) continue;
      const CgroupPath& holder = s.path(L.cg);
      const Knobs& hk = holderKnobs(L.cg);

      // Members of an active boost stay while they are in their sync call and eligible.
      s.served.clear();
      bool memberIneligible = false;
      bool membersChanged = false;
      const uint32_t stamp = li + 1;
      if (b) {
        // Recorded tids are sorted (we emit them sorted); merge-join with the syncers by tid.
        const auto& rec = b->syncerTids;
        const bool sorted = std::is_sorted(rec.begin(), rec.end());
        size_t j = 0;
        for (size_t k = 0; k < rec.size(); ++k) {
          const int64_t tid = rec[k];
          int32_t si = -1;
          if (sorted) {
            while (j < s.byTid.size() && s.byTid[j].first < tid) ++j;
            if (j < s.byTid.size() && s.byTid[j].first == tid) si = int32_t(s.byTid[j].second);
          } else {
            si = syncerByTid(tid);
          }
          if (si < 0) {
            membersChanged = true;  // left its sync call
            continue;
          }
          auto& info = s.syncers[size_t(si)];
          if (info.servedStamp == stamp) {
            membersChanged = true;  // duplicate tid in the record
          } else if (foreignTo(info, L.cg) && info.pol.isolation) {
            info.servedStamp = stamp;
            s.served.push_back(tid);
          } else {
            memberIneligible = true;
            membersChanged = true;
          }
        }
        if (!sorted) membersChanged = true;
      }

      s.wanters.clear();
      auto evaluate = [&](uint32_t sIdx, int32_t dirtier, bool belowMin) {
        Scratch::SyncerInfo& si = s.syncers[sIdx];
        if (b && si.servedStamp == stamp) return;
        const CgroupPath& dirtierPath = dirtier >= 0 ? s.path(uint32_t(dirtier)) : holder;
        auto say = [&](RefuseReason why, auto&& detail) {
          refuse(si.reported, si.id, fingerprint(holderHash(L), L.dev, why),
                 [&] { return Refuse{holder, dirtierPath, L.dev, *si.s, why, detail()}; });
        };
        if (!foreignTo(si, L.cg)) {
          say(RefuseReason::SelfSync, [&] {
            return describeSyncer(*si.s) + " is inside " + holder.display() + ", whose limit on " +
                   L.dev.str() + " it waits on: a self-sync gets no help";
          });
          return;
        }
        if (!si.pol.isolation) {
          if (si.isolationOffSaid) return;
          si.isolationOffSaid = true;
          // One line per sync call, not one per throttled limit.
          refuse(si.reported, si.id, fingerprint(0, DevNum{}, RefuseReason::IsolationOff), [&] {
            return Refuse{holder,
                          dirtierPath,
                          L.dev,
                          *si.s,
                          RefuseReason::IsolationOff,
                          "sync_isolation is off for " + si.s->cgroup.display() + ": " +
                              holder.display() + " stays throttled on " + L.dev.str()};
          });
          return;
        }
        if (!hk.allow) {
          say(RefuseReason::BoostDenied, [&] {
            return "boost is deny on " + holder.display() + ": its limit on " + L.dev.str() +
                   " is a hard cap";
          });
          return;
        }
        if (belowMin) {
          say(RefuseReason::BelowMinDirty, [&] {
            const CgroupState& st = s.cgState(uint32_t(dirtier));
            return dirtierPath.display() + " holds " + fmtBytes(dirtyBytes(st)) +
                   " dirty+writeback, below min_dirty_bytes " + fmtBytes(settings.minDirtyBytes);
          });
          return;
        }
        const IoLimits& orig = L.orig.limits;
        IoLimits proposed;
        switch (hk.ceiling.kind) {
          case BoostCeiling::Kind::Max:
            proposed = raise(orig, kUnlimited, kUnlimited);
            break;
          case BoostCeiling::Kind::Bytes:
            proposed = raise(orig, hk.ceiling.bytesPerSecond, kUnlimited);
            break;
          case BoostCeiling::Kind::Inherit: {
            const IoLimits& own = ownLimit(si, L.dev);
            proposed = raise(orig, *own.wbps, *own.wiops);
            break;
          }
        }
        if (proposed == orig) {
          say(RefuseReason::CeilingNotHigher, [&] {
            std::string own;
            if (hk.ceiling.kind == BoostCeiling::Kind::Inherit) {
              const IoLimits& l = ownLimit(si, L.dev);
              own = " (the syncer's own limit: wbps " + fmtLimit(l.wbps) + ", wiops " +
                    fmtLimit(l.wiops) + ")";
            }
            return "boost_ceiling " + describeCeiling(hk.ceiling) + own + " is not above " +
                   holder.display() + "'s wbps " + fmtLimit(orig.wbps) + ", wiops " +
                   fmtLimit(orig.wiops) + " on " + L.dev.str();
          });
          return;
        }
        if (std::binary_search(s.spentIdx.begin(), s.spentIdx.end(),
                               std::pair<uint32_t, SyncerId>{li, si.id})) {
          return;  // cooldown: this sync call already had its boost of this limit
        }
        s.wanters.push_back({sIdx, proposed, dirtier});
      };
      if (L.dirtier >= 0) {
        for (uint32_t sIdx : s.heuristicSyncers) {
          if (relevant(s.syncers[sIdx], L.dev)) evaluate(sIdx, L.dirtier, false);
        }
      }
      for (size_t k = wBegin; k < wi; ++k) {
        evaluate(s.waits[k].syncer, s.waits[k].dirtier, s.waits[k].belowMin);
      }
      if (L.inflight >= 0) {
        // Syncers with waitsOn that did not name this limit still wait for its writeback in
        // flight when they sync everything on its device.
        for (uint32_t sIdx = 0; sIdx < s.syncers.size(); ++sIdx) {
          const Scratch::SyncerInfo& si = s.syncers[sIdx];
          if (si.heuristic || !relevant(si, L.dev)) continue;
          bool named = false;
          for (size_t k = wBegin; k < wi && !named; ++k) named = s.waits[k].syncer == sIdx;
          if (!named) evaluate(sIdx, L.inflight, false);
        }
      }

      if (b) {
        auto restore = [&](EndReason why) {
          s.out.push_back(RestoreBoost{b->cgroup, b->device, b->boosted, b->original, why});
        };
        if (!s.wanters.empty()) {
          membersChanged = true;
          for (const auto& w : s.wanters) s.served.push_back(s.syncers[w.syncer].s->tid);
          std::sort(s.served.begin(), s.served.end());
          s.served.erase(std::unique(s.served.begin(), s.served.end()), s.served.end());
        }
        auto endEpisode = [&](EndReason why) {
          restore(why);
          auto& ids = state_.spent[PlannerState::PairKey{holder, L.dev}];
          for (int64_t tid : s.served) ids.push_back(s.syncers[size_t(syncerByTid(tid))].id);
        };
        if (!hk.allow) {
          restore(EndReason::PolicyChanged);
        } else if (s.served.empty()) {
          restore(memberIneligible ? EndReason::PolicyChanged : EndReason::SyncersLeft);
        } else if (hk.maxBoost.count() > 0 && now - b->started >= hk.maxBoost) {
          endEpisode(EndReason::MaxBoostTime);
        } else if (budgetExhausted(L.cg, true)) {
          endEpisode(EndReason::BudgetExhausted);
        } else {
          if (hk.maxBoost.count() > 0) wakeAt(b->started + hk.maxBoost);
          if (membersChanged) {
            std::sort(s.served.begin(), s.served.end());
            s.served.erase(std::unique(s.served.begin(), s.served.end()), s.served.end());
            if (s.served != b->syncerTids) {
              s.out.push_back(UpdateBoost{b->cgroup, b->device, s.served});
            }
          }
        }
        continue;
      }
      if (s.wanters.empty()) continue;

      if (budgetExhausted(L.cg, false)) {
        const nanoseconds used = state_.usedWithin(holder, now, hk.budget.window);
        for (const auto& w : s.wanters) {
          Scratch::SyncerInfo& si = s.syncers[w.syncer];
          refuse(si.reported, si.id,
                 fingerprint(holderHash(L), L.dev, RefuseReason::BudgetExhausted), [&] {
                   return Refuse{holder,
                                 w.dirtier >= 0 ? s.path(uint32_t(w.dirtier)) : holder,
                                 L.dev,
                                 *si.s,
                                 RefuseReason::BudgetExhausted,
                                 holder.display() + " was boosted " + fmtSeconds(used) +
                                     " of the last " + fmtSeconds(hk.budget.window) +
                                     " (boost_budget " + std::to_string(hk.budget.percent) + "%)"};
                 });
        }
        continue;
      }

      // One boost per (holder, device): the highest ceiling among the syncers that want it;
      // the earliest of them is the trigger.
      IoLimits boosted = s.wanters.front().proposed;
      for (const auto& w : s.wanters) boosted = maxOf(boosted, w.proposed);
      boosted.rbps = L.orig.limits.rbps;
      boosted.riops = L.orig.limits.riops;
      const auto& first = s.wanters.front();
      const Syncer& trigger = *s.syncers[first.syncer].s;
      const CgroupPath& dirtierPath = first.dirtier >= 0 ? s.path(uint32_t(first.dirtier)) : holder;
      auto reason = [&] {
        const CgroupState& ds =
            first.dirtier >= 0 ? s.cgState(uint32_t(first.dirtier)) : s.cgState(L.cg);
        std::string r = describeSyncer(trigger) + " waits on " + dirtierPath.display() + " (" +
                        fmtBytes(dirtyBytes(ds)) + " dirty+writeback)";
        if (dirtierPath != holder) r += ", limited at " + holder.display();
        r += " on " + L.dev.str() + ": " + limitChange(L.orig.limits, boosted);
        if (s.wanters.size() > 1) r += " (" + std::to_string(s.wanters.size()) + " syncers)";
        return r;
      };
      if (settings.dryRun) {
        std::string detail = "dry run: would boost: " + reason();
        for (const auto& w : s.wanters) {
          Scratch::SyncerInfo& si = s.syncers[w.syncer];
          refuse(si.reported, si.id, fingerprint(holderHash(L), L.dev, RefuseReason::DryRun), [&] {
            return Refuse{holder, dirtierPath, L.dev, *si.s, RefuseReason::DryRun, detail};
          });
        }
        continue;
      }
      if (hk.maxBoost.count() > 0) wakeAt(now + hk.maxBoost);
      budgetExhausted(L.cg, true);  // arms the wakeup for when the budget runs out
      StartBoost d;
      d.cgroup = holder;
      d.dirtier = dirtierPath;
      d.device = L.dev;
      d.original = L.orig;
      d.boosted = IoMaxEntry{L.dev, boosted};
      d.trigger = trigger;
      d.reason = reason();
      for (const auto& w : s.wanters) d.syncerTids.push_back(s.syncers[w.syncer].s->tid);
      std::sort(d.syncerTids.begin(), d.syncerTids.end());
      d.syncerTids.erase(std::unique(d.syncerTids.begin(), d.syncerTids.end()), d.syncerTids.end());
      s.out.push_back(std::move(d));
    }
  }

  // 10. Boosts whose cgroup vanished: restore anyway (the executor sees ENOENT and drops it).
  for (size_t i = 0; i < active.size(); ++i) {
    if (s.activeCg[i] >= 0 || active[i].shutdownLift) continue;
    s.out.push_back(RestoreBoost{active[i].cgroup, active[i].device, active[i].boosted,
                                 active[i].original, EndReason::CgroupGone});
  }

  // Restores, updates, starts, refusals; each group in the order produced (4 linear passes
  // instead of a stable sort: decisions are large to move).
  PlanResult result;
  result.decisions.reserve(s.out.size());
  for (int rank = 0; rank < 4; ++rank) {
    for (Decision& d : s.out) {
      if (decisionRank(d) == rank) result.decisions.push_back(std::move(d));
    }
  }
  s.out.clear();
  result.nextWakeup = wakeup;
  return result;
}

}  // namespace cxiosync
