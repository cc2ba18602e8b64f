// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// A small simulated system for planner tests: a snapshot to edit, a fake policy with
// inheritance, and an executor that applies decisions the way BoostExecutor does (journal +
// io.max, compare-and-restore), checking the invariants on every decision.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "policy/model/effective_limit.h"
#include "policy/planner/planner.h"

namespace cxiosync {
inline void PrintTo(const IoMaxEntry& e, std::ostream* os) {
  auto v = [](const std::optional<uint64_t>& x) {
    return !x ? std::string("-") : *x == kUnlimited ? std::string("max") : std::to_string(*x);
  };
  *os << e.dev.str() << " rbps=" << v(e.limits.rbps) << " wbps=" << v(e.limits.wbps)
      << " riops=" << v(e.limits.riops) << " wiops=" << v(e.limits.wiops);
}
}  // namespace cxiosync

namespace cxiosync::testing {

inline CgroupPath cg(std::string_view s) {
  auto p = CgroupPath::parse(s);
  EXPECT_TRUE(p.ok()) << s;
  return p.ok() ? *p : CgroupPath();
}
inline DevNum dev(std::string_view s) {
  return *parseDevNum(s);
}

inline constexpr uint64_t MiB = 1ull << 20;

inline EffectivePolicy defaultPolicy() {
  EffectivePolicy p;
  p.syncIsolation.value = true;
  p.boost.value = BoostPermission::Allow;
  p.boostCeiling.value = BoostCeiling{};
  p.maxBoost.value = std::chrono::seconds(30);
  p.boostBudget.value = BoostBudget{100, std::chrono::seconds(60)};
  return p;
}

inline std::string lim(const std::optional<uint64_t>& v) {
  return !v || *v == kUnlimited ? "max" : std::to_string(*v);
}

inline std::string tids(const std::vector<int64_t>& v) {
  std::string out;
  for (int64_t t : v) out += (out.empty() ? "" : ",") + std::to_string(t);
  return out;
}

// Compact rendering used by the scenario tables.
inline std::string render(const Decision& d) {
  if (auto* s = std::get_if<StartBoost>(&d)) {
    std::string r = "start " + s->cgroup.display() + " " + s->device.str() +
                    " wbps=" + lim(s->boosted.limits.wbps) +
                    " wiops=" + lim(s->boosted.limits.wiops);
    if (s->shutdownLift) return r + " lift";
    return r + " tids=" + tids(s->syncerTids);
  }
  if (auto* r = std::get_if<RestoreBoost>(&d)) {
    return "restore " + r->cgroup.display() + " " + r->device.str() + " " + endReasonName(r->why);
  }
  if (auto* u = std::get_if<UpdateBoost>(&d)) {
    return "update " + u->cgroup.display() + " " + u->device.str() + " tids=" + tids(u->syncerTids);
  }
  const auto& f = std::get<Refuse>(d);
  return std::string("refuse ") + refuseReasonName(f.why) + " " + f.cgroup.display() + " " +
         f.device.str() + " tid=" + std::to_string(f.syncer.tid);
}

struct World {
  Snapshot snap;
  std::vector<ActiveBoost> active;
  std::map<CgroupPath, EffectivePolicy> policies;  // explicit settings; inherited downwards
  GlobalSettings settings;
  bool shuttingDown = false;
  Planner planner;
  PlanResult last;
  std::vector<std::string> log;  // every decision ever, rendered
  // What each (cgroup, device) held before our first write: restores must give exactly it.
  std::map<std::pair<CgroupPath, DevNum>, IoMaxEntry> originals;
  uint64_t nextInode = 100;

  World() {
    snap.now = TimePoint(std::chrono::hours(1));
    settings.minDirtyBytes = MiB;
    addCgroup("/");
  }

  CgroupState& addCgroup(std::string_view path) {
    auto p = cg(path);
    auto& st = snap.cgroups[p];
    if (st.inode == 0) {
      st.path = p;
      st.inode = p.isRoot() ? 1 : nextInode++;
    }
    return st;
  }
  void removeCgroup(std::string_view path) { snap.cgroups.erase(cg(path)); }
  uint64_t inode(std::string_view path) { return addCgroup(path).inode; }

  // Sets the io.max line of `path` for `device` (nullopt keys stay absent).
  void limit(std::string_view path, std::string_view device, std::optional<uint64_t> wbps,
             std::optional<uint64_t> wiops = std::nullopt,
             std::optional<uint64_t> rbps = std::nullopt) {
    auto& st = addCgroup(path);
    IoMaxEntry e;
    e.dev = dev(device);
    e.limits = IoLimits{rbps.value_or(kUnlimited), wbps.value_or(kUnlimited), kUnlimited,
                        wiops.value_or(kUnlimited)};
    writeLine(st, e);
  }
  void dirty(std::string_view path, uint64_t bytes, uint64_t writeback = 0) {
    auto& st = addCgroup(path);
    st.fileDirty = bytes;
    st.fileWriteback = writeback;
  }

  Syncer& syncer(int64_t tid, std::string_view path, SyncSyscall call = SyncSyscall::Sync,
                 std::optional<DevNum> target = std::nullopt) {
    Syncer s;
    s.tid = tid;
    s.pid = tid;
    s.comm = "sync" + std::to_string(tid);
    s.cgroup = cg(path);
    s.syscall = call;
    s.since = snap.now;
    s.targetDevice = target;
    snap.syncers.push_back(s);
    return snap.syncers.back();
  }
  Syncer* findSyncer(int64_t tid) {
    for (auto& s : snap.syncers) {
      if (s.tid == tid) return &s;
    }
    return nullptr;
  }
  void leave(int64_t tid) {
    snap.syncers.erase(std::remove_if(snap.syncers.begin(), snap.syncers.end(),
                                      [&](const Syncer& s) { return s.tid == tid; }),
                       snap.syncers.end());
  }
  // The thread left its sync call and entered a new one.
  void again(int64_t tid) {
    if (auto* s = findSyncer(tid)) s->since = snap.now;
  }
  void advance(double secs) {
    snap.now +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(secs));
  }

  EffectivePolicy& policy(std::string_view path) {
    auto p = cg(path);
    auto it = policies.find(p);
    if (it == policies.end()) it = policies.emplace(p, lookup(p)).first;
    return it->second;
  }
  // Marks `path` a tenant root. Descendants created after this inherit the tenant (lookup()
  // copies the nearest ancestor's policy), but `tenant` itself is this cgroup's alone.
  void tenant(std::string_view path, TenantSync sync = TenantSync::Self) {
    addCgroup(path);
    EffectivePolicy& p = policy(path);
    p.tenant.value = true;
    p.tenantRoot = cg(path);
    p.tenantSync.value = sync;
  }
  EffectivePolicy lookup(const CgroupPath& p) const {
    auto chain = p.ancestorsAndSelf();
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      auto f = policies.find(*it);
      if (f == policies.end()) continue;
      EffectivePolicy out = f->second;
      if (*it != p) out.tenant.value = false;  // a boundary marks its own cgroup only
      return out;
    }
    return defaultPolicy();
  }

  const IoMaxEntry* currentLine(const CgroupPath& c, const DevNum& d) {
    auto it = snap.cgroups.find(c);
    if (it == snap.cgroups.end()) return nullptr;
    return findIoMaxEntry(it->second.ioMax, d);
  }
  // The kernel drops a line whose keys are all max.
  static void writeLine(CgroupState& st, const IoMaxEntry& e) {
    auto& lines = st.ioMax;
    lines.erase(std::remove_if(lines.begin(), lines.end(),
                               [&](const IoMaxEntry& x) { return x.dev == e.dev; }),
                lines.end());
    auto full = fullIoMaxEntry(e);
    if (full.limits != IoLimits{kUnlimited, kUnlimited, kUnlimited, kUnlimited}) {
      lines.push_back(full);
    }
  }
  IoMaxEntry currentFull(const CgroupPath& c, const DevNum& d) {
    const IoMaxEntry* e = currentLine(c, d);
    return e ? fullIoMaxEntry(*e)
             : IoMaxEntry{d, IoLimits{kUnlimited, kUnlimited, kUnlimited, kUnlimited}};
  }

  // Runs one planner step and applies the decisions like the executor would.
  std::vector<std::string> step() {
    last = planner.step(
        snap, active, [this](const CgroupPath& p) { return lookup(p); }, settings, shuttingDown);
    std::vector<std::string> out;
    for (const Decision& d : last.decisions) {
      out.push_back(render(d));
      apply(d);
    }
    log.insert(log.end(), out.begin(), out.end());
    return out;
  }

  void apply(const Decision& d) {
    if (auto* s = std::get_if<StartBoost>(&d)) {
      for (const auto& a : active) {
        EXPECT_FALSE(a.cgroup == s->cgroup && a.device == s->device)
            << "second boost for " << s->cgroup.display() << " " << s->device.str();
      }
      EXPECT_EQ(s->original, currentFull(s->cgroup, s->device))
          << "original is not what io.max holds";
      const auto& o = s->original.limits;
      const auto& b = s->boosted.limits;
      EXPECT_GE(*b.wbps, *o.wbps);
      EXPECT_GE(*b.wiops, *o.wiops);
      EXPECT_EQ(b.rbps, o.rbps);
      EXPECT_EQ(b.riops, o.riops);
      EXPECT_NE(b, o);
      if (settings.dryRun) ADD_FAILURE() << "StartBoost in dry run";
      originals.insert_or_assign(std::pair{s->cgroup, s->device}, s->original);
      ActiveBoost a{s->cgroup, s->device,     s->original,    s->boosted,
                    snap.now,  s->syncerTids, s->shutdownLift};
      active.push_back(a);
      if (auto it = snap.cgroups.find(s->cgroup); it != snap.cgroups.end()) {
        writeLine(it->second, s->boosted);
      }
    } else if (auto* r = std::get_if<RestoreBoost>(&d)) {
      auto it = std::find_if(active.begin(), active.end(), [&](const ActiveBoost& a) {
        return a.cgroup == r->cgroup && a.device == r->device;
      });
      if (it == active.end()) {
        ADD_FAILURE() << "restore of a boost that is not active: " << render(d);
        return;
      }
      EXPECT_FALSE(it->shutdownLift) << "planner restored a shutdown lift";
      EXPECT_EQ(r->restoreTo, it->original);
      EXPECT_EQ(r->expectedCurrent, it->boosted);
      auto orig = originals.find(std::pair{r->cgroup, r->device});
      if (orig != originals.end()) {
        EXPECT_EQ(r->restoreTo, orig->second) << "restore is not the recorded original";
        originals.erase(orig);
      }
      if (auto c = snap.cgroups.find(r->cgroup); c != snap.cgroups.end()) {
        if (currentFull(r->cgroup, r->device) == fullIoMaxEntry(r->expectedCurrent)) {
          writeLine(c->second, r->restoreTo);
        }
      }
      active.erase(it);
    } else if (auto* u = std::get_if<UpdateBoost>(&d)) {
      auto it = std::find_if(active.begin(), active.end(), [&](const ActiveBoost& a) {
        return a.cgroup == u->cgroup && a.device == u->device;
      });
      ASSERT_NE(it, active.end());
      it->syncerTids = u->syncerTids;
    }
  }

  const Refuse* lastRefuse() const {
    for (auto it = last.decisions.rbegin(); it != last.decisions.rend(); ++it) {
      if (auto* r = std::get_if<Refuse>(&*it)) return r;
    }
    return nullptr;
  }
  const StartBoost* lastStart() const {
    for (auto it = last.decisions.rbegin(); it != last.decisions.rend(); ++it) {
      if (auto* r = std::get_if<StartBoost>(&*it)) return r;
    }
    return nullptr;
  }
};

}  // namespace cxiosync::testing
