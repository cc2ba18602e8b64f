// SPDX-License-Identifier: GPL-2.0-or-later
// Parse throughput of the kernel text parsers (policy/formats) on generated input.
// The figure of record is io.stat with 10,000 device lines (issue 3, "Performance").
//
//   bench_parse [OUT.json] [--min-seconds S]
//
// Each case runs repeatedly for at least S seconds (default 1) and at least 5 rounds; the
// table shows the median and best round, the rate in MB/s (10^6 bytes/s) and the heap
// allocations per parse. Not a test: no pass/fail, numbers depend on the machine.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "policy/cli/command_line.h"
#include "policy/formats/io_max.h"
#include "policy/formats/io_stat.h"
#include "policy/formats/memory_stat.h"
#include "policy/formats/mountinfo.h"
#include "policy/formats/proc.h"
#include "policy/formats/trace_event.h"
#include "policy/json.h"

// The replaced operators pair malloc/free themselves; GCC cannot see that through inlining
// (nlohmann-json's containers).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// Counting allocator hooks (this benchmark binary only).
namespace {
std::atomic<uint64_t> gAllocs{0};
}  // namespace

void* operator new(size_t n) {
  gAllocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

namespace {

using Clock = std::chrono::steady_clock;

struct CaseResult {
  std::string name;
  size_t lines = 0;
  size_t bytes = 0;
  size_t rounds = 0;
  double medianMs = 0;
  double bestMs = 0;
  double medianMBps = 0;
  double bestMBps = 0;
  double allocsPerParse = 0;
};

// `parse` returns false on a parse error (the benchmark then aborts: input must be valid).
CaseResult run(const std::string& name, const std::string& text, size_t lines,
               const std::function<bool(const std::string&)>& parse, double minSeconds) {
  if (!parse(text)) {
    std::fprintf(stderr, "bench_parse: %s: generated input does not parse\n", name.c_str());
    std::exit(2);
  }
  std::vector<double> ms;
  uint64_t allocs = 0;
  auto start = Clock::now();
  while (ms.size() < 5 ||
         std::chrono::duration<double>(Clock::now() - start).count() < minSeconds) {
    uint64_t a0 = gAllocs.load(std::memory_order_relaxed);
    auto t0 = Clock::now();
    bool ok = parse(text);
    auto t1 = Clock::now();
    allocs += gAllocs.load(std::memory_order_relaxed) - a0;
    if (!ok) std::exit(2);
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  CaseResult r;
  r.name = name;
  r.lines = lines;
  r.bytes = text.size();
  r.rounds = ms.size();
  r.medianMs = ms[ms.size() / 2];
  r.bestMs = ms.front();
  r.medianMBps = r.medianMs > 0 ? text.size() / (r.medianMs / 1000.0) / 1e6 : 0;
  r.bestMBps = r.bestMs > 0 ? text.size() / (r.bestMs / 1000.0) / 1e6 : 0;
  r.allocsPerParse = static_cast<double>(allocs) / static_cast<double>(ms.size());
  return r;
}

std::string genIoStat(size_t lines) {
  std::string s;
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  auto rnd = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (size_t i = 0; i < lines; ++i) {
    s += std::to_string(8 + i / 256) + ":" + std::to_string(i % 256);
    if (i % 50 == 7) {  // an idle device: "MAJ:MIN " with no keys, as the kernel prints it
      s += " \n";
      continue;
    }
    s += " rbytes=" + std::to_string(rnd() % 100000000000ULL) +
         " wbytes=" + std::to_string(rnd() % 100000000000ULL) +
         " rios=" + std::to_string(rnd() % 10000000) + " wios=" + std::to_string(rnd() % 10000000) +
         " dbytes=" + std::to_string(rnd() % 1000000) + " dios=" + std::to_string(rnd() % 1000);
    if (i % 10 == 3) {  // iocost extras on some devices
      s += " cost.vrate=100.00 cost.usage=" + std::to_string(rnd() % 100000) +
           " cost.wait=0 cost.indebt=0 cost.indelay=0";
    }
    s += "\n";
  }
  return s;
}

std::string genIoMax(size_t lines) {
  std::string s;
  for (size_t i = 0; i < lines; ++i) {
    s += std::to_string(8 + i / 256) + ":" + std::to_string(i % 256) +
         " rbps=max wbps=" + std::to_string(1048576 * (1 + i % 100)) + " riops=max wiops=max\n";
  }
  return s;
}

std::string genMemoryStat(size_t lines) {
  static const char* kKeys[] = {"anon", "file",    "kernel",        "file_dirty",  "file_writeback",
                                "slab", "pgfault", "inactive_file", "active_file", "shmem"};
  std::string s;
  for (size_t i = 0; i < lines; ++i) {
    s += std::string(kKeys[i % 10]) + "_" + std::to_string(i) + " " +
         std::to_string(i * 4096 + 12345) + "\n";
  }
  return s;
}

std::string genMountInfo(size_t lines) {
  std::string s;
  for (size_t i = 0; i < lines; ++i) {
    s += std::to_string(100 + i) + " 1 254:" + std::to_string(i % 64) + " / /srv/vol\\040" +
         std::to_string(i) + " rw,relatime shared:" + std::to_string(i) +
         " - ext4 /dev/vdb rw,errors=remount-ro\n";
  }
  return s;
}

std::vector<std::string> genTrace(size_t lines) {
  std::vector<std::string> v;
  v.reserve(lines);
  for (size_t i = 0; i < lines; ++i) {
    std::string ctx = "            sync-" + std::to_string(1000 + i % 97) + "     [00" +
                      std::to_string(i % 2) + "] .....  " + std::to_string(100 + i) + ".000" +
                      std::to_string(100 + i % 900) + ": ";
    switch (i % 3) {
      case 0:
        v.push_back(ctx + "sys_syncfs(fd: 3)");
        break;
      case 1:
        v.push_back(ctx +
                    "writeback_queue: bdi 254:0: sb_dev 254:0 nr_pages=9223372036854775807 "
                    "sync_mode=1 kupdate=0 range_cyclic=0 background=0 reason=sync cgroup_ino=" +
                    std::to_string(23 + i % 1000));
        break;
      default:
        v.push_back(ctx + "sys_syncfs -> 0x0");
    }
  }
  return v;
}

struct BenchArgs {
  std::string out;
  double minSeconds = 1.0;
};

// Exits: 0 after --help, 2 on a bad command line.
BenchArgs parseBenchArgs(int argc, char** argv) {
  BenchArgs b;
  cxiosync::CommandLine cl(
      std::vector<std::string>(argv + 1, argv + argc), "h",
      {{"min-seconds", required_argument, nullptr, 's'}, {"help", no_argument, nullptr, 'h'}});
  while (true) {
    auto a = cl.next();
    if (!a) {
      std::fprintf(stderr, "%s: %s\n", argv[0], a.error().message.c_str());
      std::exit(2);
    }
    if (!*a) break;
    if ((*a)->id == 'h') {
      std::printf("usage: %s [OUT.json] [--min-seconds S]\n", argv[0]);
      std::exit(0);
    }
    if ((*a)->id == 's') {
      char* end = nullptr;
      b.minSeconds = std::strtod((*a)->value->c_str(), &end);
      if (*end || !(b.minSeconds > 0)) {
        std::fprintf(stderr, "%s: --min-seconds: '%s' is not a positive number\n", argv[0],
                     (*a)->value->c_str());
        std::exit(2);
      }
    } else {
      b.out = (*a)->name;
    }
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const BenchArgs args = parseBenchArgs(argc, argv);
  const std::string& out = args.out;
  const double minSeconds = args.minSeconds;

  constexpr size_t kLines = 10000;
  std::vector<CaseResult> results;
  {
    std::string t = genIoStat(kLines);
    results.push_back(run(
        "io.stat", t, kLines, [](const std::string& s) { return cxiosync::parseIoStat(s).ok(); },
        minSeconds));
  }
  {
    std::string t = genIoMax(kLines);
    results.push_back(run(
        "io.max", t, kLines, [](const std::string& s) { return cxiosync::parseIoMax(s).ok(); },
        minSeconds));
  }
  {
    std::string t = genMemoryStat(kLines);
    results.push_back(run(
        "memory.stat", t, kLines,
        [](const std::string& s) { return cxiosync::parseMemoryStat(s).ok(); }, minSeconds));
  }
  {
    std::string t = genMountInfo(kLines);
    results.push_back(run(
        "mountinfo", t, kLines,
        [](const std::string& s) { return cxiosync::parseMountInfo(s).ok(); }, minSeconds));
  }
  {
    auto lines = genTrace(kLines);
    std::string joined;
    for (const auto& l : lines) joined += l + "\n";
    results.push_back(run(
        "trace_pipe lines", joined, kLines,
        [&lines](const std::string&) {
          for (const auto& l : lines) {
            if (!cxiosync::parseTraceLine(l).ok()) return false;
          }
          return true;
        },
        minSeconds));
  }

  std::printf("%-18s %7s %10s %7s %11s %11s %11s %11s %12s\n", "format", "lines", "bytes", "rounds",
              "median ms", "best ms", "median MB/s", "best MB/s", "allocs/parse");
  for (const auto& r : results) {
    std::printf("%-18s %7zu %10zu %7zu %11.3f %11.3f %11.1f %11.1f %12.0f\n", r.name.c_str(),
                r.lines, r.bytes, r.rounds, r.medianMs, r.bestMs, r.medianMBps, r.bestMBps,
                r.allocsPerParse);
  }

  if (!out.empty()) {
    cxiosync::Json rows = cxiosync::Json::array();
    for (const auto& r : results)
      rows.push_back({{"format", r.name},
                      {"lines", r.lines},
                      {"bytes", r.bytes},
                      {"rounds", r.rounds},
                      {"median_ms", r.medianMs},
                      {"best_ms", r.bestMs},
                      {"median_mb_per_s", r.medianMBps},
                      {"best_mb_per_s", r.bestMBps},
                      {"allocs_per_parse", r.allocsPerParse}});
    std::ofstream f(out);
    f << cxiosync::jsonDump({{"benchmark", "parse"}, {"results", std::move(rows)}}, 2) << "\n";
    if (!f) {
      std::perror(out.c_str());
      return 1;
    }
    std::printf("wrote %s\n", out.c_str());
  }
  return 0;
}
