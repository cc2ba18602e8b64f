// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/planner/planner.h"

#include <algorithm>
#include <deque>
#include <string_view>
#include <tuple>

#include "policy/config/defaults.h"
#include "policy/model/effective_limit.h"
#include "policy/planner/decision_text.h"

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
  TenantSync tenantSync = TenantSync::Self;
  int32_t tenantCg = -1;  // index of the tenant root in the step's cgroups, -1: in no tenant
};

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

std::string SyncParty::describe() const {
  switch (kind) {
    case Kind::System:
      return "the system";
    case Kind::User:
      return "uid " + std::to_string(uid);
    case Kind::Tenant:
      return "tenant " + tenant.display();
    case Kind::Any:
      return "any syncer";
  }
  return "?";
}

namespace {

nanoseconds usedIn(const PlannerState::HolderUsage& u, TimePoint from, TimePoint now) {
  nanoseconds used(0);
  for (const PlannerState::Interval& iv : u.closed) {
    TimePoint b = std::max(iv.begin, from);
    TimePoint e = std::min(iv.end, now);
    if (e > b) used += e - b;
  }
  if (u.openSince) {
    TimePoint b = std::max(*u.openSince, from);
    if (now > b) used += now - b;
  }
  return used;
}

}  // namespace

nanoseconds PlannerState::usedWithin(const BudgetKey& key, TimePoint now, seconds window) const {
  const TimePoint from = now - window;
  nanoseconds used(0);
  if (historyLostAt) {
    const TimePoint e = std::min(*historyLostAt, now);
    if (e > from) used += e - from;
  }
  if (auto it = usage.find(key); it != usage.end()) used += usedIn(it->second, from, now);
  if (key.party.kind != SyncParty::Kind::Any) {
    // History from before per-party budgets: whose syncs it was is unknown, so it counts
    // against every party (for one window after an upgrade).
    if (auto it = usage.find(BudgetKey{key.account, SyncParty::any()}); it != usage.end())
      used += usedIn(it->second, from, now);
  }
  return used;
}

TimePoint PlannerState::budgetFreesAt(const BudgetKey& key, TimePoint now, seconds window,
                                      nanoseconds allowed) const {
  const nanoseconds used = usedWithin(key, now, window);
  if (used < allowed) return now;
  // The closed intervals that count (the party's own and any from before per-party budgets),
  // oldest first; an open one makes the use grow, so only an estimate can be given.
  std::vector<Interval> closed;
  for (const BudgetKey& k : {key, BudgetKey{key.account, SyncParty::any()}}) {
    auto it = usage.find(k);
    if (it == usage.end()) continue;
    if (it->second.openSince) return now + (used - allowed) + nanoseconds(1);
    closed.insert(closed.end(), it->second.closed.begin(), it->second.closed.end());
    if (key.party.kind == SyncParty::Kind::Any) break;
  }
  std::sort(closed.begin(), closed.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  // Slide the window start x forward from now - window; coverage shrinks only while x is
  // inside a closed interval. Find where it first drops below `allowed`.
  nanoseconds excess = used - allowed;
  TimePoint x = now - window;
  std::optional<TimePoint> freesAt;
  auto slide = [&](const Interval& iv) {
    if (freesAt || iv.end <= x) return;
    const TimePoint segStart = std::max(iv.begin, x);
    const nanoseconds seg = iv.end - segStart;
    if (seg > excess) {
      freesAt = segStart + excess + nanoseconds(1) + window;
      return;
    }
    excess -= seg;
    x = iv.end;
  };
  if (historyLostAt) slide(Interval{x, *historyLostAt});
  for (const Interval& iv : closed) slide(iv);
  return freesAt ? *freesAt : x + window;
}

// ---------------------------------------------------------------------------------------------

// One step's work: the per-step buffers (kept between steps, so that steps stay
// allocation-poor) and the phases of step() over them, in the order step() runs them.
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
    SyncParty party;                  // whose budget share its boosts are charged to
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
  // The (holder, device) pair decidePair() is deciding.
  struct Pair {
    uint32_t li;
    Lim& lim;
    const ActiveBoost* boost;  // in force on the pair, or null
    const CgroupPath& holder;
    const Knobs& knobs;  // the holder's
    uint32_t stamp;      // SyncerInfo::servedStamp of the boost's members
  };
  // What became of an active boost's recorded members (keepMembers).
  struct Members {
    bool ineligible = false;  // one is still syncing but no longer eligible
    bool changed = false;     // the set to record differs from the recorded one
  };

  // The step's inputs: set by startStep(), valid until step() returns.
  const Snapshot* snap = nullptr;
  const std::vector<ActiveBoost>* active = nullptr;
  const PolicyLookup* policy = nullptr;
  const GlobalSettings* settings = nullptr;
  PlannerState* state = nullptr;
  TimePoint now{};
  std::optional<TimePoint> wakeup;

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
  std::deque<Knobs> knobs;  // a deque: holderKnobs() hands out references that must survive growth
  std::vector<std::pair<uint32_t, SyncerId>> spentIdx;  // (lim, syncer id), sorted
  struct Charge {                                       // an account boosted now for a party, since
    uint32_t account;
    const SyncParty* party;
    TimePoint begin;
  };
  std::vector<Charge> charges;
  std::vector<SyncerId> present;
  std::vector<Decision> out;

  // --- lookups ---------------------------------------------------------------------------
  uint32_t cgCount() const { return uint32_t(cgs.size()); }
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
  const ActiveBoost& boost(size_t i) const { return (*active)[i]; }
  const CgroupPath& pathOr(int32_t cg, const CgroupPath& fallback) const {
    return cg >= 0 ? path(uint32_t(cg)) : fallback;
  }
  int32_t syncerByTid(int64_t tid) const {
    auto it = std::lower_bound(byTid.begin(), byTid.end(), std::pair<int64_t, uint32_t>{tid, 0});
    return (it != byTid.end() && it->first == tid) ? int32_t(it->second) : -1;
  }
  static bool relevant(const SyncerInfo& si, const DevNum& dev) {
    return si.allDevices || std::binary_search(si.devices.begin(), si.devices.end(), dev);
  }
  // Holders are always in `cgs`, so "outside the holder's subtree" is an index test.
  static bool foreignTo(const SyncerInfo& si, uint32_t holderCg) {
    return std::find(si.ancestors.begin(), si.ancestors.end(), holderCg) == si.ancestors.end();
  }
  // Policy of a holder, once per step.
  const Knobs& holderKnobs(uint32_t cg) {
    int32_t& slot = holderPol[cg];
    if (slot < 0) {
      slot = int32_t(knobs.size());
      knobs.push_back(knobsOf((*policy)(path(cg))));
    }
    return knobs[size_t(slot)];
  }
  uint64_t holderHash(Lim& L) {
    if (!L.holderHash) L.holderHash = mix(std::hash<std::string>()(path(L.cg).relative())) | 1;
    return L.holderHash;
  }
  void wakeAt(TimePoint t) {
    if (t < now + kMinWakeup) t = now + kMinWakeup;
    if (!wakeup || t < *wakeup) wakeup = t;
  }
  // Emits a refusal once per sync call and (holder, device, reason).
  template <class Make>
  void refuse(std::unordered_set<uint64_t>*& reported, const SyncerId& id, uint64_t fp,
              Make&& make) {
    if (!reported) reported = &state->reported[id];
    if (!reported->insert(fp).second) return;
    out.push_back(make());
  }
  // The planner's view of a cgroup's effective policy, with its tenant root as an index.
  Knobs knobsOf(const EffectivePolicy& p) const {
    Knobs k{p.syncIsolation.value,
            p.boost.value == BoostPermission::Allow,
            p.boostCeiling.value,
            p.maxBoost.value,
            p.boostBudget.value,
            p.tenantSync.value,
            -1};
    if (p.tenantRoot) k.tenantCg = findCg(p.tenantRoot->relative());
    return k;
  }
  // Budgets are kept per tenant: a holder inside a tenant is accounted to its tenant root, any
  // other holder to itself.
  uint32_t accountOf(uint32_t holderCg) {
    const int32_t t = holderKnobs(holderCg).tenantCg;
    return t >= 0 ? uint32_t(t) : holderCg;
  }
  // Who tenant root `t` belongs to: the uid in a built-in tenant's name, else the uid owning its
  // cgroup directory (a delegated subtree's User=). Root owns every cgroup nobody delegated,
  // so a directory owned by uid 0 names no owner.
  std::optional<uint32_t> tenantOwner(uint32_t t) const {
    if (auto uid = builtinTenantOwner(path(t))) return uid;
    const auto& owner = cgState(t).ownerUid;
    if (owner && *owner != 0) return owner;
    return std::nullopt;
  }
  // A self-sync by tenancy (tenant_sync self at the dirtier's tenant): the syncer is in the
  // dirtier's tenant, or runs as that tenant's owner (a user's cron job or session scope
  // syncing while the user's manager is throttled).
  enum class Tenancy { Foreign, SameTenant, SameOwner };
  Tenancy tenancy(const SyncerInfo& si, uint32_t dirtierCg) {
    const int32_t t = holderKnobs(dirtierCg).tenantCg;
    if (t < 0 || holderKnobs(uint32_t(t)).tenantSync != TenantSync::Self) return Tenancy::Foreign;
    if (si.pol.tenantCg == t) return Tenancy::SameTenant;
    const auto owner = tenantOwner(uint32_t(t));
    if (owner && si.s->euid && *si.s->euid == *owner) return Tenancy::SameOwner;
    return Tenancy::Foreign;
  }
  bool sameTenant(const SyncerInfo& si, uint32_t dirtierCg) {
    return tenancy(si, dirtierCg) != Tenancy::Foreign;
  }
  BudgetKey budgetKey(uint32_t holderCg, const SyncParty& party) {
    return BudgetKey{path(accountOf(holderCg)), party};
  }
  std::string sameTenantDetail(const SyncerInfo& si, uint32_t dirtierCg, const Lim& L);
  const IoLimits& ownLimit(SyncerInfo& si, const DevNum& dev);
  bool budgetExhausted(uint32_t holderCg, const SyncParty& party, bool boostedNow);
  std::string budgetDetail(uint32_t holderCg, const SyncParty& party);

  // --- phases, in step() order -----------------------------------------------------------
  void startStep(const Snapshot& sn, const std::vector<ActiveBoost>& ac, const PolicyLookup& po,
                 const GlobalSettings& se, PlannerState& st);
  void indexCgroups();
  void indexActive();
  void indexLimits();
  void accountBudgets();
  void forgetDepartedSyncers(bool liftAll);
  void liftForShutdown();
  void prepareSyncers();
  void assignDirtiers();
  void collectWaits();
  void decidePairs();
  void restoreVanished();
  PlanResult emitOrdered();

  // --- parts of the phases ---------------------------------------------------------------
  void trimUsage(PlannerState::HolderUsage& u, uint32_t cg);
  void liftOne(Lim& L, const Syncer& shutdownSyncer, std::unordered_set<uint64_t>*& reported);
  void prepareSyncer(SyncerInfo& si, const Syncer& sy, uint32_t index);
  void rebuildInodes();
  int32_t cgByInode(uint64_t ino);
  void decidePair(uint32_t li, size_t wBegin, size_t wEnd);
  Members keepMembers(const Pair& p);
  void gatherWanters(const Pair& p, size_t wBegin, size_t wEnd);
  void evaluate(const Pair& p, uint32_t sIdx, int32_t dirtier, bool belowMin);
  IoLimits proposedLimits(const Pair& p, SyncerInfo& si);
  std::string ceilingNotHigherDetail(const Pair& p, SyncerInfo& si);
  void continueBoost(const Pair& p, Members m);
  void refuseOverBudget(const Pair& p);
  void dropOverBudgetMembers(const Pair& p);
  void startBoost(const Pair& p);
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
  s.startStep(snap, active, policy, settings, state_);
  const bool liftAll = shuttingDown && settings.liftOnShutdown;
  s.indexCgroups();
  s.indexActive();
  s.indexLimits();
  s.forgetDepartedSyncers(liftAll);
  s.prepareSyncers();  // before the accounting: a boost is charged to its members' parties
  s.accountBudgets();
  if (liftAll) {
    s.liftForShutdown();
  } else {
    s.assignDirtiers();
    s.collectWaits();
    s.decidePairs();
  }
  s.restoreVanished();
  return s.emitOrdered();
}

void Planner::Scratch::startStep(const Snapshot& sn, const std::vector<ActiveBoost>& ac,
                                 const PolicyLookup& po, const GlobalSettings& se,
                                 PlannerState& st) {
  snap = &sn;
  active = &ac;
  policy = &po;
  settings = &se;
  state = &st;
  now = sn.now;
  wakeup.reset();
  out.clear();
}

// Cgroups in path order (the map's order) for prefix lookups without allocation.
void Planner::Scratch::indexCgroups() {
  cgs.clear();
  cgs.reserve(snap->cgroups.size());
  for (const auto& kv : snap->cgroups) cgs.push_back(&kv);
  holderPol.assign(cgs.size(), -1);
  knobs.clear();
}

// Active boosts by cgroup index.
void Planner::Scratch::indexActive() {
  activeCg.assign(active->size(), -1);
  activeByCg.clear();
  for (size_t i = 0; i < active->size(); ++i) {
    int32_t cg = findCg(boost(i).cgroup.relative());
    activeCg[i] = cg;
    if (cg >= 0) activeByCg.push_back({{uint32_t(cg), boost(i).device}, uint32_t(i)});
  }
  std::sort(activeByCg.begin(), activeByCg.end());
}

// Finite write limits per cgroup, boosted pairs seen through their recorded original.
void Planner::Scratch::indexLimits() {
  const uint32_t nCg = cgCount();
  lims.clear();
  limBegin.assign(nCg + 1, 0);
  size_t ai = 0;
  for (uint32_t c = 0; c < nCg; ++c) {
    limBegin[c] = uint32_t(lims.size());
    size_t aBegin = ai;
    while (ai < activeByCg.size() && activeByCg[ai].first.first == c) ++ai;
    for (const IoMaxEntry& e : cgState(c).ioMax) {
      bool boosted = false;
      for (size_t k = aBegin; k < ai; ++k) boosted |= activeByCg[k].first.second == e.dev;
      if (boosted || !hasFiniteWriteLimit(e.limits)) continue;
      Lim lim;
      lim.cg = c;
      lim.dev = e.dev;
      lim.orig = fullIoMaxEntry(e);
      lims.push_back(std::move(lim));
    }
    for (size_t k = aBegin; k < ai; ++k) {
      const ActiveBoost& b = boost(activeByCg[k].second);
      if (k > aBegin && activeByCg[k - 1].first == activeByCg[k].first) continue;  // dup
      Lim lim;
      lim.cg = c;
      lim.dev = b.device;
      lim.orig = fullIoMaxEntry(b.original);
      lim.orig.dev = b.device;
      lim.active = int32_t(activeByCg[k].second);
      lims.push_back(std::move(lim));
    }
    std::sort(lims.begin() + limBegin[c], lims.end(),
              [](const Lim& a, const Lim& b) { return a.dev < b.dev; });
  }
  limBegin[nCg] = uint32_t(lims.size());
}

void Planner::Scratch::trimUsage(PlannerState::HolderUsage& u, uint32_t cg) {
  const seconds window = holderKnobs(cg).budget.window;
  auto keepFrom =
      std::find_if(u.closed.begin(), u.closed.end(),
                   [&](const PlannerState::Interval& iv) { return iv.end > now - window; });
  u.closed.erase(u.closed.begin(), keepFrom);
}

// Budget accounting from what is actually in force: each boost of an account is charged to
// the parties of its members still in their sync call. Both lists are in key order: merge
// them instead of looking keys up.
void Planner::Scratch::accountBudgets() {
  charges.clear();
  for (const auto& [key, idx] : activeByCg) {
    const ActiveBoost& b = boost(idx);
    if (b.shutdownLift) continue;
    TimePoint begin = std::min(b.started, now);
    // A party first seen in the boost now joined it at the last step (UpdateBoost) at the
    // earliest; the boost's start is the conservative answer when that step is unknown.
    if (state->lastStep && *state->lastStep > begin && *state->lastStep <= now)
      begin = *state->lastStep;
    const uint32_t account = accountOf(key.first);
    for (int64_t tid : b.syncerTids) {
      const int32_t si = syncerByTid(tid);
      if (si < 0) continue;  // left its sync call: no longer served
      charges.push_back({account, &syncers[size_t(si)].party, begin});
    }
  }
  auto keyLess = [&](const Charge& a, const Charge& b) {
    const int c = path(a.account).relative().compare(path(b.account).relative());
    return c != 0 ? c < 0 : *a.party < *b.party;
  };
  // One entry per key (its earliest begin): a party's boosted time is the time any boost of the
  // account served it, not the sum over the account's limits.
  std::sort(charges.begin(), charges.end(), [&](const Charge& a, const Charge& b) {
    if (keyLess(a, b)) return true;
    if (keyLess(b, a)) return false;
    return a.begin < b.begin;
  });
  charges.erase(std::unique(charges.begin(), charges.end(),
                            [&](const Charge& a, const Charge& b) {
                              return !keyLess(a, b) && !keyLess(b, a);
                            }),
                charges.end());
  auto& usage = state->usage;
  auto it = usage.begin();
  size_t k = 0;
  while (it != usage.end() || k < charges.size()) {
    int cmp = 0;
    if (it == usage.end()) {
      cmp = 1;
    } else if (k == charges.size()) {
      cmp = -1;
    } else {
      cmp = it->first.account.relative().compare(path(charges[k].account).relative());
      if (cmp == 0)
        cmp = it->first.party < *charges[k].party ? -1 : *charges[k].party < it->first.party;
    }
    if (cmp > 0) {  // boosted, no history yet
      const Charge& c = charges[k++];
      auto& u =
          usage.emplace_hint(it, BudgetKey{path(c.account), *c.party}, PlannerState::HolderUsage{})
              ->second;
      u.openSince = c.begin;
      u.lastSeenActive = now;
      continue;
    }
    auto& u = it->second;
    if (cmp == 0) {  // boosted now
      const Charge& c = charges[k++];
      TimePoint begin = c.begin;
      if (!u.closed.empty()) begin = std::max(begin, u.closed.back().end);
      u.openSince = u.openSince ? std::min(*u.openSince, begin) : begin;
      u.lastSeenActive = now;
      trimUsage(u, c.account);
      ++it;
      continue;
    }
    // not boosted now: close the open interval at the last step that saw it in force
    if (u.openSince) {
      if (u.lastSeenActive > *u.openSince) u.closed.push_back({*u.openSince, u.lastSeenActive});
      u.openSince.reset();
    }
    int32_t cg = findCg(it->first.account.relative());
    if (cg >= 0) trimUsage(u, uint32_t(cg));
    if (cg < 0 || u.closed.empty()) {  // gone cgroups take their history with them
      it = usage.erase(it);
    } else {
      ++it;
    }
  }
}

// Whether the boost_budget share of `party` in holder `holderCg`'s account (its tenant, or
// itself) is used up; arms the wakeup for when that changes.
bool Planner::Scratch::budgetExhausted(uint32_t holderCg, const SyncParty& party, bool boostedNow) {
  const uint32_t cg = accountOf(holderCg);
  const Knobs& k = holderKnobs(cg);
  if (k.budget.percent >= 100 || k.budget.window.count() <= 0) return false;
  const nanoseconds allowed = nanoseconds(k.budget.window) * k.budget.percent / 100;
  const BudgetKey key{path(cg), party};
  const nanoseconds used = state->usedWithin(key, now, k.budget.window);
  if (used < allowed) {
    if (boostedNow) wakeAt(now + (allowed - used));
    return false;
  }
  if (!boostedNow) wakeAt(state->budgetFreesAt(key, now, k.budget.window, allowed));
  return true;
}

// Syncers present now, stable order (earliest first); what the state keeps about the others
// (reported refusals, cooldowns) goes. Then the cooldowns by limit index.
void Planner::Scratch::forgetDepartedSyncers(bool liftAll) {
  present.clear();
  for (const Syncer& sy : snap->syncers) present.push_back(SyncerId{sy.tid, sy.since});
  if (liftAll) present.push_back(SyncerId{0, TimePoint{}});
  std::sort(present.begin(), present.end());
  auto gone = [&](const SyncerId& id) {
    return !std::binary_search(present.begin(), present.end(), id);
  };
  for (auto it = state->reported.begin(); it != state->reported.end();) {
    it = gone(it->first) ? state->reported.erase(it) : std::next(it);
  }
  for (auto it = state->spent.begin(); it != state->spent.end();) {
    auto& v = it->second;
    v.erase(std::remove_if(v.begin(), v.end(), gone), v.end());
    it = v.empty() ? state->spent.erase(it) : std::next(it);
  }
  spentIdx.clear();
  for (const auto& [key, ids] : state->spent) {
    int32_t cg = findCg(key.cgroup.relative());
    if (cg < 0) continue;
    int32_t li = findLim(uint32_t(cg), key.device);
    if (li < 0) continue;
    for (const SyncerId& id : ids) spentIdx.push_back({uint32_t(li), id});
  }
  std::sort(spentIdx.begin(), spentIdx.end());
}

// Shutdown: lift every boostable limit, nothing else.
void Planner::Scratch::liftForShutdown() {
  Syncer shutdownSyncer;
  shutdownSyncer.comm = "(shutdown)";
  shutdownSyncer.since = now;
  std::unordered_set<uint64_t>* reported = nullptr;
  for (Lim& L : lims) liftOne(L, shutdownSyncer, reported);
}

void Planner::Scratch::liftOne(Lim& L, const Syncer& shutdownSyncer,
                               std::unordered_set<uint64_t>*& reported) {
  const SyncerId sid{0, TimePoint{}};
  const ActiveBoost* b = L.active >= 0 ? &boost(size_t(L.active)) : nullptr;
  if (b && b->shutdownLift) return;
  const Knobs& k = holderKnobs(L.cg);
  const CgroupPath& holder = path(L.cg);
  if (b) {
    // An ordinary boost ends here; the lift (if any) starts on the next step from what
    // io.max then really holds (the restore is compare-and-restore and may keep a value
    // someone else wrote, so the original cannot be predicted).
    out.push_back(RestoreBoost{b->cgroup, b->device, b->boosted, b->original,
                               k.allow ? EndReason::Shutdown : EndReason::PolicyChanged});
    wakeAt(now);
    return;
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
    return;
  }
  const bool bytes = k.ceiling.kind == BoostCeiling::Kind::Bytes;
  const IoLimits lifted =
      raise(L.orig.limits, bytes ? k.ceiling.bytesPerSecond : kUnlimited, kUnlimited);
  if (lifted == L.orig.limits) return;
  if (settings->dryRun) {
    refuse(reported, sid, fingerprint(holderHash(L), L.dev, RefuseReason::DryRun), [&] {
      return Refuse{holder,
                    holder,
                    L.dev,
                    shutdownSyncer,
                    RefuseReason::DryRun,
                    "dry run: shutdown would lift " + holder.display() + " on " + L.dev.str() +
                        ": " + limitChange(L.orig.limits, lifted)};
    });
    return;
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
  out.push_back(std::move(d));
}

// Syncers earliest first (the earliest wanting a boost is its trigger), with their policy,
// devices and ancestors.
void Planner::Scratch::prepareSyncers() {
  syncers.clear();
  heuristicSyncers.clear();
  byTid.clear();
  std::vector<const Syncer*> order;
  order.reserve(snap->syncers.size());
  for (const Syncer& sy : snap->syncers) order.push_back(&sy);
  std::sort(order.begin(), order.end(), [](const Syncer* a, const Syncer* b) {
    return std::tie(a->since, a->tid) < std::tie(b->since, b->tid);
  });
  syncers.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) prepareSyncer(syncers[i], *order[i], uint32_t(i));
  std::sort(byTid.begin(), byTid.end());
}

void Planner::Scratch::prepareSyncer(SyncerInfo& si, const Syncer& sy, uint32_t index) {
  si.devices.clear();  // keep capacities: steps stay allocation-poor
  si.effCache.clear();
  si.ancestors.clear();
  si.reported = nullptr;
  si.isolationOffSaid = false;
  si.allDevices = true;
  si.servedStamp = 0;
  si.s = &sy;
  forEachAncestorOrSelf(sy.cgroup.relative(), [&](std::string_view p) {
    int32_t c = findCg(p);
    if (c >= 0) si.ancestors.push_back(uint32_t(c));
  });
  si.id = SyncerId{sy.tid, sy.since};
  const EffectivePolicy pol = (*policy)(sy.cgroup);
  si.pol = knobsOf(pol);
  // Root's interactive syncs (an admin's session below /user.slice) are isolated unless a
  // layer says otherwise (issue 25: the quick start's `time sync` from an ssh session).
  if (!si.pol.isolation && sy.euid == 0u &&
      pol.syncIsolation.source.kind == ValueSource::Kind::Default &&
      rootSyncIsolatedByDefault(sy.cgroup)) {
    si.pol.isolation = true;
  }
  if (pol.tenantRoot) {
    si.party = SyncParty::ofTenant(*pol.tenantRoot);
  } else if (sy.euid && *sy.euid != 0) {
    si.party = SyncParty::user(*sy.euid);  // a user's cron job: the user's share, not the system's
  } else {
    si.party = SyncParty::system();
  }
  si.heuristic = sy.waitsOn.empty();
  if (sy.syscall != SyncSyscall::Sync && sy.targetDevice) {
    si.allDevices = false;
    si.devices.push_back(*sy.targetDevice);
    for (const DevNum& d : snap->devices.below(*sy.targetDevice)) si.devices.push_back(d);
    std::sort(si.devices.begin(), si.devices.end());
  }
  auto rep = state->reported.find(si.id);
  if (rep != state->reported.end()) si.reported = &rep->second;
  if (si.heuristic) heuristicSyncers.push_back(index);
  byTid.push_back({sy.tid, index});
}

// The syncer's own effective write limit on `dev` (for boost_ceiling: inherit).
const IoLimits& Planner::Scratch::ownLimit(SyncerInfo& si, const DevNum& dev) {
  for (const auto& [d, l] : si.effCache) {
    if (d == dev) return l;
  }
  IoLimits eff{kUnlimited, kUnlimited, kUnlimited, kUnlimited};
  forEachAncestorOrSelf(si.s->cgroup.relative(), [&](std::string_view p) {
    int32_t cg = findCg(p);
    if (cg < 0) return;
    int32_t li = findLim(uint32_t(cg), dev);
    if (li < 0) return;
    const IoLimits& l = lims[size_t(li)].orig.limits;
    eff.wbps = std::min(*eff.wbps, l.wbps.value_or(kUnlimited));
    eff.wiops = std::min(*eff.wiops, l.wiops.value_or(kUnlimited));
  });
  si.effCache.push_back({dev, eff});
  return si.effCache.back().second;
}

// Dirtiers by the memory.stat heuristic: for syncers without waitsOn, and writeback in flight
// for those with it.
void Planner::Scratch::assignDirtiers() {
  if (syncers.empty() || lims.empty()) return;
  const bool anyNamed = heuristicSyncers.size() < syncers.size();
  const bool wantDirty = !heuristicSyncers.empty();
  const uint64_t minDirty = settings->minDirtyBytes;
  for (uint32_t c = 0; c < cgCount(); ++c) {
    const CgroupState& st = cgState(c);
    const bool dirty = wantDirty && dirtyBytes(st) >= minDirty;
    const bool inflight = anyNamed && st.fileWriteback >= minDirty;
    if (!dirty && !inflight) continue;
    forEachAncestorOrSelf(path(c).relative(), [&](std::string_view p) {
      int32_t h = findCg(p);
      if (h < 0) return;
      for (uint32_t li = limBegin[size_t(h)]; li < limBegin[size_t(h) + 1]; ++li) {
        // Deepest cgroup wins (memory.stat is hierarchical: ancestors include it).
        auto deepest = [&](int32_t& d) {
          if (d < 0 || path(uint32_t(d)).relative().size() < path(c).relative().size())
            d = int32_t(c);
        };
        if (dirty) deepest(lims[li].dirtier);
        if (inflight) deepest(lims[li].inflight);
      }
    });
  }
}

// Inode index, kept across steps and rebuilt only when a lookup finds it stale.
void Planner::Scratch::rebuildInodes() {
  byInode.clear();
  for (uint32_t c = 0; c < cgCount(); ++c) byInode.push_back({cgState(c).inode, c});
  std::sort(byInode.begin(), byInode.end());
  inodesFresh = true;
}

int32_t Planner::Scratch::cgByInode(uint64_t ino) {
  const uint32_t nCg = cgCount();
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto it =
        std::lower_bound(byInode.begin(), byInode.end(), std::pair<uint64_t, uint32_t>{ino, 0});
    if (it != byInode.end() && it->first == ino && it->second < nCg &&
        cgState(it->second).inode == ino) {
      return int32_t(it->second);
    }
    if (inodesFresh) return -1;
    rebuildInodes();
  }
  return -1;
}

// Dirtiers named by the kernel (tracefs writeback_queue reason=sync).
void Planner::Scratch::collectWaits() {
  waits.clear();
  bool anyWaits = false;
  for (const auto& si : syncers) anyWaits |= !si.heuristic;
  if (!anyWaits) return;
  inodesFresh = false;
  if (byInode.size() != cgCount()) rebuildInodes();
  for (uint32_t i = 0; i < syncers.size(); ++i) {
    for (const auto& [ino, bdi] : syncers[i].s->waitsOn) {
      const int32_t found = cgByInode(ino);
      if (found < 0) continue;  // not a cgroup we know
      const uint32_t c = uint32_t(found);
      const bool belowMin = dirtyBytes(cgState(c)) < settings->minDirtyBytes;
      auto devs = snap->devices.below(bdi);
      devs.push_back(bdi);
      forEachAncestorOrSelf(path(c).relative(), [&](std::string_view p) {
        int32_t h = findCg(p);
        if (h < 0) return;
        for (uint32_t li = limBegin[size_t(h)]; li < limBegin[size_t(h) + 1]; ++li) {
          if (std::find(devs.begin(), devs.end(), lims[li].dev) == devs.end()) continue;
          waits.push_back({li, i, int32_t(c), belowMin});
        }
      });
    }
  }
  // One entry per (limit, syncer): prefer one that is not below min_dirty_bytes.
  std::sort(waits.begin(), waits.end(), [](const auto& a, const auto& b) {
    return std::tie(a.lim, a.syncer, a.belowMin) < std::tie(b.lim, b.syncer, b.belowMin);
  });
  waits.erase(std::unique(waits.begin(), waits.end(),
                          [](const auto& a, const auto& b) {
                            return a.lim == b.lim && a.syncer == b.syncer;
                          }),
              waits.end());
}

// Every limit, pair by pair: active boosts first, then new ones.
void Planner::Scratch::decidePairs() {
  size_t wi = 0;
  for (uint32_t li = 0; li < lims.size(); ++li) {
    const size_t wBegin = wi;
    while (wi < waits.size() && waits[wi].lim == li) ++wi;
    decidePair(li, wBegin, wi);
  }
}

// waits[wBegin, wEnd): the syncers the kernel named as waiting on limit `li`.
void Planner::Scratch::decidePair(uint32_t li, size_t wBegin, size_t wEnd) {
  Lim& L = lims[li];
  const ActiveBoost* b = L.active >= 0 ? &boost(size_t(L.active)) : nullptr;
  if (b && b->shutdownLift) return;  // never touched by the planner
  if (!b && L.dirtier < 0 && L.inflight < 0 && wBegin == wEnd) return;
  const Pair p{li, L, b, path(L.cg), holderKnobs(L.cg), li + 1};
  const Members m = b ? keepMembers(p) : Members{};
  wanters.clear();
  gatherWanters(p, wBegin, wEnd);
  if (b) {
    continueBoost(p, m);
  } else {
    refuseOverBudget(p);  // wanters whose party's share is spent
    if (!wanters.empty()) startBoost(p);
  }
}

// Members of an active boost stay while they are in their sync call and eligible: they go to
// `served`, marked with the pair's stamp.
Planner::Scratch::Members Planner::Scratch::keepMembers(const Pair& p) {
  served.clear();
  Members m;
  // Recorded tids are sorted (we emit them sorted); merge-join with the syncers by tid.
  const auto& rec = p.boost->syncerTids;
  const bool sorted = std::is_sorted(rec.begin(), rec.end());
  size_t j = 0;
  for (size_t k = 0; k < rec.size(); ++k) {
    const int64_t tid = rec[k];
    int32_t si = -1;
    if (sorted) {
      while (j < byTid.size() && byTid[j].first < tid) ++j;
      if (j < byTid.size() && byTid[j].first == tid) si = int32_t(byTid[j].second);
    } else {
      si = syncerByTid(tid);
    }
    if (si < 0) {
      m.changed = true;  // left its sync call
      continue;
    }
    auto& info = syncers[size_t(si)];
    if (info.servedStamp == p.stamp) {
      m.changed = true;  // duplicate tid in the record
    } else if (foreignTo(info, p.lim.cg) && info.pol.isolation &&
               !sameTenant(info,
                           uint32_t(p.lim.dirtier >= 0 ? p.lim.dirtier : int32_t(p.lim.cg)))) {
      info.servedStamp = p.stamp;
      served.push_back(tid);
    } else {
      m.ineligible = true;
      m.changed = true;
    }
  }
  if (!sorted) m.changed = true;
  return m;
}

// The syncers that want the pair boosted (and are not already served by its boost) go to
// `wanters`; the others get their refusal.
void Planner::Scratch::gatherWanters(const Pair& p, size_t wBegin, size_t wEnd) {
  const Lim& L = p.lim;
  if (L.dirtier >= 0) {
    for (uint32_t sIdx : heuristicSyncers) {
      if (relevant(syncers[sIdx], L.dev)) evaluate(p, sIdx, L.dirtier, false);
    }
  }
  for (size_t k = wBegin; k < wEnd; ++k) {
    evaluate(p, waits[k].syncer, waits[k].dirtier, waits[k].belowMin);
  }
  if (L.inflight >= 0) {
    // Syncers with waitsOn that did not name this limit still wait for its writeback in
    // flight when they sync everything on its device.
    for (uint32_t sIdx = 0; sIdx < syncers.size(); ++sIdx) {
      const SyncerInfo& si = syncers[sIdx];
      if (si.heuristic || !relevant(si, L.dev)) continue;
      bool named = false;
      for (size_t k = wBegin; k < wEnd && !named; ++k) named = waits[k].syncer == sIdx;
      if (!named) evaluate(p, sIdx, L.inflight, false);
    }
  }
}

void Planner::Scratch::evaluate(const Pair& p, uint32_t sIdx, int32_t dirtier, bool belowMin) {
  SyncerInfo& si = syncers[sIdx];
  if (p.boost && si.servedStamp == p.stamp) return;
  const Lim& L = p.lim;
  const CgroupPath& holder = p.holder;
  const CgroupPath& dirtierPath = pathOr(dirtier, holder);
  auto say = [&](RefuseReason why, auto&& detail) {
    refuse(si.reported, si.id, fingerprint(holderHash(p.lim), L.dev, why),
           [&] { return Refuse{holder, dirtierPath, L.dev, *si.s, why, detail()}; });
  };
  if (!foreignTo(si, L.cg)) {
    say(RefuseReason::SelfSync, [&] {
      return describeSyncer(*si.s) + " is inside " + holder.display() + ", whose limit on " +
             L.dev.str() + " it waits on: a self-sync gets no help";
    });
    return;
  }
  const uint32_t dirtierCg = dirtier >= 0 ? uint32_t(dirtier) : L.cg;
  if (sameTenant(si, dirtierCg)) {
    say(RefuseReason::SelfSync, [&] { return sameTenantDetail(si, dirtierCg, L); });
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
  if (!p.knobs.allow) {
    say(RefuseReason::BoostDenied, [&] {
      return "boost is deny on " + holder.display() + ": its limit on " + L.dev.str() +
             " is a hard cap";
    });
    return;
  }
  if (belowMin) {
    say(RefuseReason::BelowMinDirty, [&] {
      return dirtierPath.display() + " holds " + fmtBytes(dirtyBytes(cgState(uint32_t(dirtier)))) +
             " dirty+writeback, below min_dirty_bytes " + fmtBytes(settings->minDirtyBytes);
    });
    return;
  }
  const IoLimits proposed = proposedLimits(p, si);
  if (proposed == L.orig.limits) {
    say(RefuseReason::CeilingNotHigher, [&] { return ceilingNotHigherDetail(p, si); });
    return;
  }
  if (std::binary_search(spentIdx.begin(), spentIdx.end(),
                         std::pair<uint32_t, SyncerId>{p.li, si.id})) {
    return;  // cooldown: this sync call already had its boost of this limit
  }
  wanters.push_back({sIdx, proposed, dirtier});
}

std::string Planner::Scratch::sameTenantDetail(const SyncerInfo& si, uint32_t dirtierCg,
                                               const Lim& L) {
  const std::string help =
      ": a self-sync and gets no help with " + path(L.cg).display() + "'s limit on " + L.dev.str();
  if (tenancy(si, dirtierCg) == Tenancy::SameOwner) {
    const uint32_t t = uint32_t(holderKnobs(dirtierCg).tenantCg);
    return describeSyncer(*si.s) + " runs as uid " + std::to_string(*si.s->euid) +
           ", the owner of the dirtier " + path(dirtierCg).display() + "'s tenant " +
           path(t).display() + " (tenant_sync self): a sync by a tenant's owner is" + help;
  }
  return describeSyncer(*si.s) + " and the dirtier " + path(dirtierCg).display() +
         " are in one tenant, " + path(uint32_t(si.pol.tenantCg)).display() +
         " (tenant_sync self)" + ": a sync within a tenant is" + help;
}

// The pair's limit raised to the holder's boost_ceiling, as this syncer would have it.
IoLimits Planner::Scratch::proposedLimits(const Pair& p, SyncerInfo& si) {
  const IoLimits& orig = p.lim.orig.limits;
  switch (p.knobs.ceiling.kind) {
    case BoostCeiling::Kind::Max:
      return raise(orig, kUnlimited, kUnlimited);
    case BoostCeiling::Kind::Bytes:
      return raise(orig, p.knobs.ceiling.bytesPerSecond, kUnlimited);
    case BoostCeiling::Kind::Inherit: {
      const IoLimits& own = ownLimit(si, p.lim.dev);
      return raise(orig, *own.wbps, *own.wiops);
    }
  }
  return IoLimits{};
}

std::string Planner::Scratch::ceilingNotHigherDetail(const Pair& p, SyncerInfo& si) {
  const IoLimits& orig = p.lim.orig.limits;
  std::string own;
  if (p.knobs.ceiling.kind == BoostCeiling::Kind::Inherit) {
    const IoLimits& l = ownLimit(si, p.lim.dev);
    own =
        " (the syncer's own limit: wbps " + fmtLimit(l.wbps) + ", wiops " + fmtLimit(l.wiops) + ")";
  }
  return "boost_ceiling " + describeCeiling(p.knobs.ceiling) + own + " is not above " +
         p.holder.display() + "'s wbps " + fmtLimit(orig.wbps) + ", wiops " + fmtLimit(orig.wiops) +
         " on " + p.lim.dev.str();
}

// An active boost: ends (policy, no syncers left, max_boost_seconds, budget), or stays with
// its members and the new wanters.
void Planner::Scratch::continueBoost(const Pair& p, Members m) {
  const ActiveBoost& b = *p.boost;
  const Knobs& hk = p.knobs;
  auto restore = [&](EndReason why) {
    out.push_back(RestoreBoost{b.cgroup, b.device, b.boosted, b.original, why});
  };
  auto sortServed = [&] {
    std::sort(served.begin(), served.end());
    served.erase(std::unique(served.begin(), served.end()), served.end());
  };
  refuseOverBudget(p);  // a wanter whose party's share is spent does not join
  if (!wanters.empty()) {
    m.changed = true;
    for (const auto& w : wanters) served.push_back(syncers[w.syncer].s->tid);
    sortServed();
  }
  if (!hk.allow) {
    restore(EndReason::PolicyChanged);
  } else if (served.empty()) {
    restore(m.ineligible ? EndReason::PolicyChanged : EndReason::SyncersLeft);
  } else if (hk.maxBoost.count() > 0 && now - b.started >= hk.maxBoost) {
    auto& ids = state->spent[PlannerState::PairKey{p.holder, p.lim.dev}];
    for (int64_t tid : served) ids.push_back(syncers[size_t(syncerByTid(tid))].id);
    restore(EndReason::MaxBoostTime);
  } else {
    const size_t before = served.size();
    dropOverBudgetMembers(p);
    if (served.empty()) {
      restore(EndReason::BudgetExhausted);
      return;
    }
    if (served.size() != before) m.changed = true;
    if (hk.maxBoost.count() > 0) wakeAt(b.started + hk.maxBoost);
    if (m.changed) {
      sortServed();
      if (served != b.syncerTids) out.push_back(UpdateBoost{b.cgroup, b.device, served});
    }
  }
}

// Members whose party's share of the budget is spent leave the boost (cooldown: their sync
// call is not served again by it); the others keep it. When some stay, each one that leaves is
// told why; when none stay, the restore line says it.
void Planner::Scratch::dropOverBudgetMembers(const Pair& p) {
  std::vector<uint32_t> dropped;
  auto keep = served.begin();
  for (int64_t tid : served) {
    const uint32_t si = uint32_t(syncerByTid(tid));
    if (budgetExhausted(p.lim.cg, syncers[si].party, true)) {
      dropped.push_back(si);
    } else {
      *keep++ = tid;
    }
  }
  served.erase(keep, served.end());
  if (dropped.empty()) return;
  auto& ids = state->spent[PlannerState::PairKey{p.holder, p.lim.dev}];
  for (uint32_t si : dropped) ids.push_back(syncers[si].id);
  if (served.empty()) return;
  for (uint32_t sIdx : dropped) {
    SyncerInfo& si = syncers[sIdx];
    refuse(si.reported, si.id,
           fingerprint(holderHash(p.lim), p.lim.dev, RefuseReason::BudgetExhausted), [&] {
             return Refuse{
                 p.holder, pathOr(p.lim.dirtier, p.holder), p.lim.dev,
                 *si.s,    RefuseReason::BudgetExhausted,   budgetDetail(p.lim.cg, si.party)};
           });
  }
}

std::string Planner::Scratch::budgetDetail(uint32_t holderCg, const SyncParty& party) {
  const uint32_t account = accountOf(holderCg);
  const Knobs& hk = holderKnobs(account);
  const nanoseconds used =
      state->usedWithin(BudgetKey{path(account), party}, now, hk.budget.window);
  const std::string who = account == holderCg ? path(holderCg).display()
                                              : "tenant " + path(account).display() + " (of " +
                                                    path(holderCg).display() + ")";
  return who + " was boosted " + fmtSeconds(used) + " of the last " + fmtSeconds(hk.budget.window) +
         " for syncs of " + party.describe() + " (boost_budget " +
         std::to_string(hk.budget.percent) + "% per syncing party)";
}

// Wanters whose party's share of the holder's budget is spent are refused and leave `wanters`.
void Planner::Scratch::refuseOverBudget(const Pair& p) {
  auto keep = wanters.begin();
  for (const Wanter& w : wanters) {
    SyncerInfo& si = syncers[w.syncer];
    if (!budgetExhausted(p.lim.cg, si.party, false)) {
      *keep++ = w;
      continue;
    }
    refuse(si.reported, si.id,
           fingerprint(holderHash(p.lim), p.lim.dev, RefuseReason::BudgetExhausted), [&] {
             return Refuse{
                 p.holder, pathOr(w.dirtier, p.holder),   p.lim.dev,
                 *si.s,    RefuseReason::BudgetExhausted, budgetDetail(p.lim.cg, si.party)};
           });
  }
  wanters.erase(keep, wanters.end());
}

// One boost per (holder, device): the highest ceiling among the syncers that want it; the
// earliest of them is the trigger. In a dry run, a refusal for each of them instead.
void Planner::Scratch::startBoost(const Pair& p) {
  const Lim& L = p.lim;
  const CgroupPath& holder = p.holder;
  IoLimits boosted = wanters.front().proposed;
  for (const auto& w : wanters) boosted = maxOf(boosted, w.proposed);
  boosted.rbps = L.orig.limits.rbps;
  boosted.riops = L.orig.limits.riops;
  const auto& first = wanters.front();
  const Syncer& trigger = *syncers[first.syncer].s;
  const CgroupPath& dirtierPath = pathOr(first.dirtier, holder);
  auto reason = [&] {
    const CgroupState& ds = first.dirtier >= 0 ? cgState(uint32_t(first.dirtier)) : cgState(L.cg);
    std::string r = describeSyncer(trigger) + " waits on " + dirtierPath.display() + " (" +
                    fmtBytes(dirtyBytes(ds)) + " dirty+writeback)";
    if (dirtierPath != holder) r += ", limited at " + holder.display();
    r += " on " + L.dev.str() + ": " + limitChange(L.orig.limits, boosted);
    if (wanters.size() > 1) r += " (" + std::to_string(wanters.size()) + " syncers)";
    return r;
  };
  if (settings->dryRun) {
    std::string detail = "dry run: would boost: " + reason();
    for (const auto& w : wanters) {
      SyncerInfo& si = syncers[w.syncer];
      refuse(si.reported, si.id, fingerprint(holderHash(p.lim), L.dev, RefuseReason::DryRun), [&] {
        return Refuse{holder, dirtierPath, L.dev, *si.s, RefuseReason::DryRun, detail};
      });
    }
    return;
  }
  if (p.knobs.maxBoost.count() > 0) wakeAt(now + p.knobs.maxBoost);
  // Arms the wakeup for when a wanter's share runs out.
  for (const auto& w : wanters) budgetExhausted(L.cg, syncers[w.syncer].party, true);
  StartBoost d;
  d.cgroup = holder;
  d.dirtier = dirtierPath;
  d.device = L.dev;
  d.original = L.orig;
  d.boosted = IoMaxEntry{L.dev, boosted};
  d.trigger = trigger;
  d.reason = reason();
  for (const auto& w : wanters) d.syncerTids.push_back(syncers[w.syncer].s->tid);
  std::sort(d.syncerTids.begin(), d.syncerTids.end());
  d.syncerTids.erase(std::unique(d.syncerTids.begin(), d.syncerTids.end()), d.syncerTids.end());
  out.push_back(std::move(d));
}

// Boosts whose cgroup vanished: restore anyway (the executor sees ENOENT and drops it).
void Planner::Scratch::restoreVanished() {
  for (size_t i = 0; i < active->size(); ++i) {
    const ActiveBoost& b = boost(i);
    if (activeCg[i] >= 0 || b.shutdownLift) continue;
    out.push_back(RestoreBoost{b.cgroup, b.device, b.boosted, b.original, EndReason::CgroupGone});
  }
}

// Restores, updates, starts, refusals; each group in the order produced (4 linear passes
// instead of a stable sort: decisions are large to move). Drops the step's inputs.
PlanResult Planner::Scratch::emitOrdered() {
  PlanResult result;
  result.decisions.reserve(out.size());
  for (int rank = 0; rank < 4; ++rank) {
    for (Decision& d : out) {
      if (decisionRank(d) == rank) result.decisions.push_back(std::move(d));
    }
  }
  out.clear();
  result.nextWakeup = wakeup;
  state->lastStep = now;
  snap = nullptr;
  active = nullptr;
  policy = nullptr;
  settings = nullptr;
  state = nullptr;
  return result;
}

}  // namespace cxiosync
