// SPDX-License-Identifier: GPL-2.0-or-later
// Planner benchmark: one planner step over N cgroups and 100 syncers (N = 1k, 5k, 10k).
// Prints a table and writes JSON (argv[1], default planner_bench.json). Not a timed test.
//
// World per N: 100 slices /sNN, each with N/100 - 1 children. "stress": every second child is
// limited on 254:0 (wbps 1 MiB/s), every tenth also on 8:0 (wiops 200); every tenth child holds 32
// MiB dirty ("typical" 10k: every tenth limited, every 100th dirty). 100 syncers, each in its own
// cgroup /system.slice/svcK: 70 sync() without tracefs data (memory.stat heuristic), 20 sync() with
// writeback_queue data naming 5 dirty cgroups, 10 syncfs() on a loop device 7:0 backed by 254:0.
//
// Phases: "first" = fresh planner, nothing boosted yet (every dirtier gets a StartBoost);
// "steady" = the same syncers still waiting, all boosts in force (no decisions expected);
// "churn" = one syncer leaves and another arrives per step (UpdateBoosts).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "policy/json.h"
#include "policy/planner/planner.h"

// The replaced operators pair malloc/free themselves; GCC cannot see that through inlining.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// --- allocation counting: every operator new in this binary goes through here -------------
static std::atomic<uint64_t> gAllocs{0};
void* operator new(std::size_t n) {
  gAllocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace cxiosync {
namespace {

// CPU time of this thread: the machines running this are shared, and wall time there mostly
// measures the neighbours. Both are reported.
double threadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

using Ns = std::chrono::nanoseconds;
constexpr uint64_t MiB = 1ull << 20;

CgroupPath P(const std::string& s) {
  return *CgroupPath::parse(s);
}

struct World {
  Snapshot snap;
  std::vector<ActiveBoost> active;
  EffectivePolicy policy;
  GlobalSettings settings;
  int64_t nextTid = 1000;
};

Syncer makeSyncer(World& w, int k, const std::vector<uint64_t>& dirtyInodes) {
  Syncer s;
  s.tid = w.nextTid++;
  s.pid = s.tid;
  s.comm = "backup-" + std::to_string(k);
  s.cgroup = P("/system.slice/svc" + std::to_string(k));
  s.since = w.snap.now;
  if (k % 10 == 9) {
    s.syscall = SyncSyscall::Syncfs;
    s.targetDevice = DevNum{7, 0};
  } else if (k % 10 >= 7) {
    for (int j = 0; j < 5; ++j) {
      s.waitsOn.push_back(
          {dirtyInodes[(size_t(k) * 7 + size_t(j) * 13) % dirtyInodes.size()], DevNum{254, 0}});
    }
  }
  return s;
}

World build(int nCgroups, int limitEvery, int dirtyEvery) {
  World w;
  w.snap.now = TimePoint(std::chrono::hours(1));
  w.policy.syncIsolation.value = true;
  w.policy.boost.value = BoostPermission::Allow;
  w.policy.maxBoost.value = std::chrono::seconds(3600);
  w.policy.boostBudget.value = BoostBudget{100, std::chrono::seconds(60)};
  w.policy.boostCeiling.source =
      ValueSource{ValueSource::Kind::Yaml, "/etc/cxiosync/cxiosync.d/50-tenants.yaml", 12};
  uint64_t ino = 2;
  auto add = [&](const std::string& p) -> CgroupState& {
    auto path = P(p);
    auto& st = w.snap.cgroups[path];
    st.path = path;
    st.inode = ino++;
    return st;
  };
  add("/");
  add("/system.slice");
  std::vector<uint64_t> dirtyInodes;
  const int slices = 100;
  const int perSlice = nCgroups / slices - 1;
  for (int i = 0; i < slices; ++i) {
    std::string slice = "/s" + std::to_string(i);
    add(slice);
    for (int j = 0; j < perSlice; ++j) {
      auto& st = add(slice + "/c" + std::to_string(j));
      if (j % limitEvery == 0) {
        st.ioMax.push_back(
            IoMaxEntry{DevNum{254, 0}, IoLimits{kUnlimited, MiB, kUnlimited, kUnlimited}});
      }
      if (j % (limitEvery * 5) == 0) {
        st.ioMax.push_back(
            IoMaxEntry{DevNum{8, 0}, IoLimits{kUnlimited, kUnlimited, kUnlimited, 200}});
      }
      if (j % dirtyEvery == 0) {
        st.fileDirty = 32 * MiB;
        dirtyInodes.push_back(st.inode);
      }
    }
  }
  for (int k = 0; k < 100; ++k) add("/system.slice/svc" + std::to_string(k));
  w.snap.devices.lower[DevNum{7, 0}] = {DevNum{254, 0}};
  for (int k = 0; k < 100; ++k) w.snap.syncers.push_back(makeSyncer(w, k, dirtyInodes));
  return w;
}

// What the executor would do with the decisions (journal side only; io.max is left as the
// snapshot shows it, which is what the planner sees through the recorded originals anyway).
void applyDecisions(World& w, const std::vector<Decision>& ds) {
  for (const Decision& d : ds) {
    if (auto* s = std::get_if<StartBoost>(&d)) {
      w.active.push_back(ActiveBoost{s->cgroup, s->device, s->original, s->boosted, w.snap.now,
                                     s->syncerTids, s->shutdownLift});
    } else if (auto* r = std::get_if<RestoreBoost>(&d)) {
      std::erase_if(w.active, [&](const ActiveBoost& a) {
        return a.cgroup == r->cgroup && a.device == r->device;
      });
    } else if (auto* u = std::get_if<UpdateBoost>(&d)) {
      for (auto& a : w.active) {
        if (a.cgroup == u->cgroup && a.device == u->device) a.syncerTids = u->syncerTids;
      }
    }
  }
}

struct Sample {
  double cpuUs = 0;   // median thread CPU time per step
  double wallUs = 0;  // median wall time per step
  double wallP95Us = 0;
  double allocsPerStep = 0;
  size_t decisions = 0;  // of the last step
};

// Runs `iterations` steps; `prepare(i)` edits the world before each, `planner(i)` gives the
// planner to use. Decisions are applied as the executor would.
template <class Prepare, class GetPlanner>
Sample measure(World& w, int iterations, Prepare&& prepare, GetPlanner&& planner, bool apply) {
  PolicyLookup lookup = [&](const CgroupPath&) { return w.policy; };
  std::vector<double> wall, cpu;
  uint64_t allocs = 0;
  size_t decisions = 0;
  for (int i = 0; i < iterations; ++i) {
    prepare(i);
    Planner& p = planner(i);
    const uint64_t a0 = gAllocs.load();
    const double c0 = threadCpuUs();
    const auto t0 = std::chrono::steady_clock::now();
    PlanResult r = p.step(w.snap, w.active, lookup, w.settings, false);
    const auto t1 = std::chrono::steady_clock::now();
    const double c1 = threadCpuUs();
    allocs += gAllocs.load() - a0;
    wall.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    cpu.push_back(c1 - c0);
    decisions = r.decisions.size();
    if (apply) applyDecisions(w, r.decisions);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  Sample s;
  s.cpuUs = cpu[cpu.size() / 2];
  s.wallUs = wall[wall.size() / 2];
  s.wallP95Us = wall[std::min(wall.size() - 1, wall.size() * 95 / 100)];
  s.allocsPerStep = double(allocs) / iterations;
  s.decisions = decisions;
  return s;
}

struct Row {
  const char* world = "";
  int cgroups = 0;
  size_t limits = 0, dirtiers = 0, boosts = 0;
  Sample first, steady, churn;
};

Row run(const char* label, int n, int limitEvery, int dirtyEvery) {
  Row row;
  row.world = label;
  World w = build(n, limitEvery, dirtyEvery);
  for (const auto& [p, st] : w.snap.cgroups) {
    row.limits += st.ioMax.size();
    row.dirtiers += st.fileDirty >= w.settings.minDirtyBytes;
  }
  row.cgroups = int(w.snap.cgroups.size());
  // first: a fresh planner each time, nothing boosted yet
  std::vector<Planner> fresh(10);
  row.first = measure(
      w, 10, [](int) {}, [&](int i) -> Planner& { return fresh[size_t(i)]; }, false);
  // establish the boosts, then measure with everything in force
  Planner planner;
  {
    PolicyLookup lookup = [&](const CgroupPath&) { return w.policy; };
    applyDecisions(w, planner.step(w.snap, w.active, lookup, w.settings, false).decisions);
  }
  row.boosts = w.active.size();
  auto same = [&](int) -> Planner& { return planner; };
  row.steady = measure(
      w, 100, [&](int) { w.snap.now += std::chrono::milliseconds(100); }, same, true);
  std::vector<uint64_t> dirtyInodes;
  for (const auto& [p, st] : w.snap.cgroups) {
    if (st.fileDirty) dirtyInodes.push_back(st.inode);
  }
  row.churn = measure(
      w, 100,
      [&](int i) {
        w.snap.now += std::chrono::milliseconds(100);
        w.snap.syncers.erase(w.snap.syncers.begin());
        w.snap.syncers.push_back(makeSyncer(w, i % 100, dirtyInodes));
      },
      same, true);
  return row;
}

}  // namespace
}  // namespace cxiosync

int main(int argc, char** argv) {
  using namespace cxiosync;
  const std::string out = argc > 1 ? argv[1] : "planner_bench.json";
  std::vector<Row> rows;
  // stress: every 2nd leaf limited, every 10th dirty; typical: every 10th / 100th.
  for (int n : {1000, 5000, 10000}) rows.push_back(run("stress", n, 2, 10));
  rows.push_back(run("typical", 10000, 10, 100));

  std::printf(
      "planner step, 100 syncers: median thread-CPU us | median wall us | allocations/step\n");
  std::printf("%-8s %8s %7s %8s %7s | %-28s | %-28s | %-28s\n", "world", "cgroups", "limits",
              "dirtiers", "boosts", "first (all boosts new)", "steady (nothing to do)",
              "churn (1 leaves, 1 joins)");
  auto cell = [](const Sample& s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%7.0f cpu %7.0f wall %6.0f al", s.cpuUs, s.wallUs,
                  s.allocsPerStep);
    return std::string(buf);
  };
  for (const Row& r : rows) {
    std::printf("%-8s %8d %7zu %8zu %7zu | %-28s | %-28s | %-28s\n", r.world, r.cgroups, r.limits,
                r.dirtiers, r.boosts, cell(r.first).c_str(), cell(r.steady).c_str(),
                cell(r.churn).c_str());
  }
  if (rows.size() >= 3) {
    const Row& a = rows.front();
    const Row& b = rows[2];
    std::printf("linearity (cpu): %.1fx cgroups -> first %.1fx, steady %.1fx, churn %.1fx\n",
                double(b.cgroups) / a.cgroups, b.first.cpuUs / a.first.cpuUs,
                b.steady.cpuUs / a.steady.cpuUs, b.churn.cpuUs / a.churn.cpuUs);
  }

  auto sample = [](const Sample& s) {
    return Json{{"cpu_median_us", s.cpuUs},
                {"wall_median_us", s.wallUs},
                {"wall_p95_us", s.wallP95Us},
                {"allocs_per_step", s.allocsPerStep},
                {"decisions", s.decisions}};
  };
  Json list = Json::array();
  for (const Row& r : rows)
    list.push_back({{"world", r.world},
                    {"cgroups", r.cgroups},
                    {"limits", r.limits},
                    {"dirtiers", r.dirtiers},
                    {"boosts", r.boosts},
                    {"first", sample(r.first)},
                    {"steady", sample(r.steady)},
                    {"churn", sample(r.churn)}});
  std::ofstream js(out);
  js << jsonDump({{"benchmark", "planner_step"}, {"syncers", 100}, {"rows", std::move(list)}}, 2)
     << "\n";
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
