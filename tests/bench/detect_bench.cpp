// SPDX-License-Identifier: GPL-2.0-or-later
// Sensing cost (issue 4, "Performance"):
//  1. procfs scan cost vs thread count: real threads of this process on the host's /proc
//     (1k, 10k sleeping threads), and fake /proc trees (1k, 10k threads, 1% in state D).
//  2. Idle cost: 1,000 cgroups (10 limited, nothing dirty) in a fake cgroupfs on tmpfs:
//     one tick = SnapshotBuilder::refresh + ProcDetector::scan(anyLimitedDirty()), at
//     100 ms ticks, plus the full walk amortised over its 30 s period: CPU per second.
// Prints a table; writes JSON to argv[1] (default detect_bench.json).
//   build/tests/bench/detect_bench [out.json] [--no-real-threads]
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/kernel/cgroup_fs.h"
#include "daemon/kernel/proc_fs.h"
#include "daemon/sense/proc_detector.h"
#include "daemon/sense/snapshot_builder.h"
#include "policy/cli/command_line.h"
#include "policy/json.h"

using namespace cxiosync;
namespace fsys = std::filesystem;

namespace {

double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
double wallMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void writeFile(const fsys::path& p, const std::string& s) {
  fsys::create_directories(p.parent_path());
  std::ofstream(p) << s;
}

std::string statLine(long tid, char state) {
  std::string s = std::to_string(tid) + " (worker) " + state + " 1 1 1 0 -1 4194560";
  for (int f = 10; f <= 21; ++f) s += " 0";
  s += " 12345";
  for (int f = 23; f <= 52; ++f) s += " 0";
  return s + "\n";
}

fsys::path makeTemp(const char* tag) {
  std::string t = (fsys::path("/dev/shm") / (std::string("cxiosync-bench-") + tag + "-XXXXXX"));
  if (!fsys::exists("/dev/shm")) t = (fsys::temp_directory_path() / "cxiosync-bench-XXXXXX");
  return ::mkdtemp(t.data());
}

struct ScanResult {
  std::string what;
  uint64_t threads = 0;
  double cpuMsPerPass = 0, wallMsPerPass = 0;
  uint64_t syncers = 0;
};

ScanResult measureScan(const std::string& what, const ProcFs& proc, int passes) {
  ProcDetector det(proc, ProcDetectorOptions{false, nullptr, true});
  (void)det.scan(true);  // warm the dentry cache
  double c0 = threadCpuMs(), w0 = wallMs();
  for (int i = 0; i < passes; ++i) (void)det.scan(true);
  ScanResult r;
  r.what = what;
  r.cpuMsPerPass = (threadCpuMs() - c0) / passes;
  r.wallMsPerPass = (wallMs() - w0) / passes;
  r.threads = det.lastScan().threads;
  r.syncers = det.lastScan().syncers;
  return r;
}

ScanResult fakeProc(int threads) {
  fsys::path root = makeTemp("proc");
  const int perProc = 10;
  for (int t = 0; t < threads; ++t) {
    long pid = 1000 + (t / perProc) * perProc, tid = 1000 + t;
    char state = (t % 100 == 7) ? 'D' : 'S';
    if (tid == pid) writeFile(root / std::to_string(pid) / "stat", statLine(pid, 'S'));
    fsys::path base = root / std::to_string(pid) / "task" / std::to_string(tid);
    writeFile(base / "stat", statLine(tid, state));
    writeFile(base / "syscall", state == 'D' ? "162 0x0 0x0 0x0 0x0 0x0 0x0 0x7ffd 0x7f\n"
                                             : "7 0x0 0x0 0x0 0x0 0x0 0x0 0x7ffd 0x7f\n");
    writeFile(base / "cgroup", "0::/cg2\n");
  }
  auto proc = ProcFs::open(root.string());
  ScanResult r = measureScan("fake /proc, " + std::to_string(threads) + " threads (1% D)", **proc,
                             threads >= 10000 ? 10 : 50);
  fsys::remove_all(root);
  return r;
}

// Sleepers block in read(2) on a pipe until its write end closes: no wakeups while
// the scan is measured.
int gPipe[2] = {-1, -1};
void* sleeper(void*) {
  char c;
  while (::read(gPipe[0], &c, 1) > 0) {
  }
  return nullptr;
}

ScanResult realThreads(int extra) {
  std::vector<pthread_t> ts;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  if (::pipe(gPipe) != 0) return ScanResult{};
  for (int i = 0; i < extra; ++i) {
    pthread_t t;
    if (pthread_create(&t, &attr, sleeper, nullptr) != 0) break;
    ts.push_back(t);
  }
  auto proc = ProcFs::open("/proc");
  ScanResult r = measureScan("host /proc + " + std::to_string(ts.size()) + " sleeping threads",
                             **proc, extra >= 10000 ? 5 : 20);
  ::close(gPipe[1]);
  for (auto t : ts) pthread_join(t, nullptr);
  ::close(gPipe[0]);
  return r;
}

struct IdleResult {
  int cgroups = 0, limited = 0;
  double tickCpuMs = 0, walkCpuMs = 0, cpuPercentAt100ms = 0;
  size_t snapshotCgroups = 0;
};

IdleResult idle(int n, int limited) {
  fsys::path root = makeTemp("cg");
  writeFile(root / "cgroup.controllers", "io memory\n");
  for (int i = 0; i < n; ++i) {
    // Two levels: 20 slices of n/20 services, like system.slice/*.service.
    fsys::path d = root / ("slice" + std::to_string(i % 20)) / ("svc" + std::to_string(i));
    writeFile(d / "cgroup.controllers", "io memory\n");
    writeFile(d / "io.max", i < limited ? "8:0 rbps=max wbps=1048576 riops=max wiops=max\n" : "");
    writeFile(d / "memory.stat", "anon 0\nfile 4096\nfile_dirty 0\nfile_writeback 0\n");
  }
  for (int s = 0; s < 20; ++s) {
    writeFile(root / ("slice" + std::to_string(s)) / "cgroup.controllers", "io memory\n");
    writeFile(root / ("slice" + std::to_string(s)) / "io.max", "");
  }
  auto cg = CgroupFs::open(root.string());
  auto proc = ProcFs::open("/proc");
  SnapshotBuilder b(**cg, nullptr, SnapshotBuilderOptions{});
  ProcDetector det(**proc, ProcDetectorOptions{});
  IdleResult r;
  r.cgroups = n;
  r.limited = limited;
  auto now = Clock::now();
  double c0 = threadCpuMs();
  (void)b.rescan(now);
  r.walkCpuMs = threadCpuMs() - c0;
  const int ticks = 200;
  (void)b.refresh(now);
  c0 = threadCpuMs();
  for (int i = 0; i < ticks; ++i) {
    (void)b.refresh(now);  // no rescan: same `now`, next walk is 30 s away
    (void)det.scan(b.anyLimitedDirty());
    auto snap = b.assemble(det.syncers(), now);
    r.snapshotCgroups = snap.cgroups.size();
  }
  r.tickCpuMs = (threadCpuMs() - c0) / ticks;
  // 10 ticks per second + one walk per 30 s.
  r.cpuPercentAt100ms = (10 * r.tickCpuMs + r.walkCpuMs / 30.0) / 1000.0 * 100.0;
  fsys::remove_all(root);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = "detect_bench.json";
  bool real = true;
  cxiosync::CommandLine cl(std::vector<std::string>(argv + 1, argv + argc), "",
                           {{"no-real-threads", no_argument, nullptr, 'n'}});
  while (true) {
    auto a = cl.next();
    if (!a) {
      std::fprintf(stderr, "%s: %s\n", argv[0], a.error().message.c_str());
      return 2;
    }
    if (!*a) break;
    if ((*a)->id == 'n')
      real = false;
    else
      out = (*a)->name;
  }
  // As the daemon should (LimitNOFILE=): the procfs scan keeps one stat fd per thread.
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    std::printf("RLIMIT_NOFILE soft limit: %llu\n", static_cast<unsigned long long>(rl.rlim_cur));
  }
  std::vector<ScanResult> scans;
  scans.push_back(fakeProc(1000));
  scans.push_back(fakeProc(10000));
  if (real) {
    scans.push_back(realThreads(0));
    scans.push_back(realThreads(1000));
    scans.push_back(realThreads(10000));
  }
  std::printf("%-44s %8s %12s %12s %8s\n", "procfs scan", "threads", "cpu ms/pass", "wall ms/pass",
              "syncers");
  for (const auto& s : scans) {
    std::printf("%-44s %8llu %12.2f %12.2f %8llu\n", s.what.c_str(),
                static_cast<unsigned long long>(s.threads), s.cpuMsPerPass, s.wallMsPerPass,
                static_cast<unsigned long long>(s.syncers));
  }
  std::vector<IdleResult> idles{idle(1000, 10), idle(10000, 100)};
  std::printf("\n%-10s %8s %14s %14s %18s %10s\n", "cgroups", "limited", "tick cpu ms",
              "walk cpu ms", "cpu %% at 100ms", "snapshot");
  for (const auto& r : idles) {
    std::printf("%-10d %8d %14.3f %14.2f %17.4f%% %10zu\n", r.cgroups, r.limited, r.tickCpuMs,
                r.walkCpuMs, r.cpuPercentAt100ms, r.snapshotCgroups);
  }
  Json procfs = Json::array(), idle = Json::array();
  for (const auto& s : scans)
    procfs.push_back({{"what", s.what},
                      {"threads", s.threads},
                      {"cpu_ms_per_pass", s.cpuMsPerPass},
                      {"wall_ms_per_pass", s.wallMsPerPass},
                      {"syncers", s.syncers}});
  for (const auto& r : idles)
    idle.push_back({{"cgroups", r.cgroups},
                    {"limited", r.limited},
                    {"tick_cpu_ms", r.tickCpuMs},
                    {"walk_cpu_ms", r.walkCpuMs},
                    {"cpu_percent_at_100ms_ticks", r.cpuPercentAt100ms}});
  std::ofstream j(out);
  j << jsonDump({{"procfs_scan", std::move(procfs)}, {"idle", std::move(idle)}}) << "\n";
  std::printf("\nwrote %s\n", out.c_str());
  return 0;
}
