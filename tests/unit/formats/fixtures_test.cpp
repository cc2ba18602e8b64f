// SPDX-License-Identifier: GPL-2.0-or-later
// Every real kernel text file captured in tests/fixtures/kernel-*/ (tests/vm) goes through
// its parser. A new fixture file must be either parsed here or listed as not ours, so a
// capture that adds a format nobody parses is noticed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "policy/formats/cgroup_events.h"
#include "policy/formats/io_max.h"
#include "policy/formats/io_stat.h"
#include "policy/formats/memory_stat.h"
#include "policy/formats/mountinfo.h"
#include "policy/formats/proc.h"
#include "policy/formats/psi.h"
#include "policy/formats/trace_event.h"

namespace cxiosync {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = CXIOSYNC_FIXTURES_DIR;
const fs::path kKernel61 = kFixtures / "kernel-6.1";
const fs::path kKernel612 = kFixtures / "kernel-6.12";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool startsWith(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

// Which parser a fixture file belongs to; empty string: not a format of ours.
std::string classify(const fs::path& rel) {
  const std::string name = rel.filename().string();
  const std::string parent = rel.parent_path().filename().string();
  if (parent == "tracefs") return startsWith(name, "trace-") ? "trace" : "";
  if (startsWith(name, "io.max")) return "io.max";
  if (startsWith(name, "io.stat")) return "io.stat";
  if (startsWith(name, "memory.stat")) return "memory.stat";
  if (name.find("pressure") != std::string::npos) return "psi";
  if (startsWith(name, "cgroup.events")) return "cgroup.events";
  if (startsWith(name, "mountinfo")) return "mountinfo";
  if (name == "stat" || name == "task-stat") return "proc.stat";
  if (name == "syscall" || name == "task-syscall") return "proc.syscall";
  if (name == "cgroup" || name == "task-cgroup" || startsWith(name, "proc-self-cgroup")) {
    return "proc.cgroup";
  }
  return "";
}

// Files in the capture that no parser of policy/formats reads (yet).
bool knownNotOurs(const fs::path& rel) {
  const std::string name = rel.filename().string();
  const std::string parent = rel.parent_path().filename().string();
  static const char* kNames[] = {"README.md",    "meta.json",   "status",       "task-status",
                                 "wchan",        "task-wchan",  "stack",        "task-stack",
                                 "cgroup.procs", "io.cost.qos", "io.cost.model"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  if (startsWith(name, "root-cgroup.")) return true;
  if (parent == "tracefs" && startsWith(name, "format-")) return true;
  return false;
}

std::string parseFixture(const std::string& kind, const std::string& text) {
  auto msg = [](const auto& r) { return r.ok() ? std::string() : r.error().message; };
  if (kind == "io.max") return msg(parseIoMax(text));
  if (kind == "io.stat") return msg(parseIoStat(text));
  if (kind == "memory.stat") return msg(parseMemoryStat(text));
  if (kind == "psi") return msg(parsePsi(text));
  if (kind == "cgroup.events") return msg(parseCgroupEvents(text));
  if (kind == "mountinfo") return msg(parseMountInfo(text));
  if (kind == "proc.stat") return msg(parseProcStat(text));
  if (kind == "proc.syscall") return msg(parseProcSyscall(text));
  if (kind == "proc.cgroup") return msg(parseProcCgroupV2(text));
  if (kind == "trace") {
    std::istringstream in(text);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.empty() || line[0] == '#') continue;  // `trace` file header
      auto r = parseTraceLine(line);
      if (!r.ok()) return "line " + std::to_string(n) + ": " + r.error().message;
    }
    return "";
  }
  return "no parser for " + kind;
}

TEST(Fixtures, EveryCapturedFileParses) {
  if (!fs::exists(kFixtures)) GTEST_SKIP() << "no fixtures at " << kFixtures;
  size_t parsed = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kFixtures)) {
    if (!entry.is_regular_file()) continue;
    fs::path rel = fs::relative(entry.path(), kFixtures);
    std::string kind = classify(rel);
    if (kind.empty()) {
      EXPECT_TRUE(knownNotOurs(rel)) << "fixture with no parser and not listed: " << rel;
      continue;
    }
    std::string err = parseFixture(kind, slurp(entry.path()));
    EXPECT_EQ(err, "") << rel << " (" << kind << ")";
    ++parsed;
  }
  EXPECT_GE(parsed, 25u);
}

// Each fixture stays a valid input when its final newline is missing or it is cut after
// any complete line: parsers must not depend on more than they document.
TEST(Fixtures, FilesWithoutTrailingNewlineStillParse) {
  if (!fs::exists(kFixtures)) GTEST_SKIP();
  for (const auto& entry : fs::recursive_directory_iterator(kFixtures)) {
    if (!entry.is_regular_file()) continue;
    fs::path rel = fs::relative(entry.path(), kFixtures);
    std::string kind = classify(rel);
    if (kind.empty()) continue;
    std::string text = slurp(entry.path());
    if (!text.empty() && text.back() == '\n') text.pop_back();
    EXPECT_EQ(parseFixture(kind, text), "") << rel;
  }
}

// Every prefix of every fixture: a clear error or a value, never a crash (ASan/UBSan build).
TEST(Fixtures, EveryPrefixIsHandled) {
  if (!fs::exists(kFixtures)) GTEST_SKIP();
  for (const auto& entry : fs::recursive_directory_iterator(kFixtures)) {
    if (!entry.is_regular_file()) continue;
    fs::path rel = fs::relative(entry.path(), kFixtures);
    std::string kind = classify(rel);
    if (kind.empty()) continue;
    std::string text = slurp(entry.path());
    const size_t step = text.size() > 4096 ? text.size() / 512 : 1;
    for (size_t n = 0; n <= text.size(); n += step) (void)parseFixture(kind, text.substr(0, n));
  }
}

TEST(Fixtures61, IoMax) {
  auto r = parseIoMax(slurp(kKernel61 / "io.max"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].dev, (DevNum{254, 0}));
  EXPECT_EQ((*r)[0].limits.wbps, 1048576u);
  EXPECT_EQ((*r)[0].limits.rbps, kUnlimited);
  EXPECT_EQ(formatIoMaxLine((*r)[0]), "254:0 rbps=max wbps=1048576 riops=max wiops=max");

  auto all = parseIoMax(slurp(kKernel61 / "io.max-all-keys"));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[0].limits.riops, 100u);
  EXPECT_EQ((*all)[0].limits.wiops, 50u);

  auto two = parseIoMax(slurp(kKernel61 / "io.max-two-devices"));
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].dev, (DevNum{253, 0}));
  EXPECT_EQ((*two)[0].limits.riops, 1000u);

  auto empty = parseIoMax(slurp(kKernel61 / "io.max-empty"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(Fixtures61, IoStatDeviceLineWithoutKeys) {
  auto r = parseIoStat(slurp(kKernel61 / "io.stat"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].dev, (DevNum{253, 0}));
  EXPECT_TRUE((*r)[0].counters.empty());
  EXPECT_EQ((*r)[1].get("wbytes"), 8388608u);

  auto none = parseIoStat(slurp(kKernel61 / "io.stat-nothing-written"));
  ASSERT_TRUE(none.ok());
  ASSERT_EQ(none->size(), 1u);
  EXPECT_TRUE((*none)[0].counters.empty());
}

TEST(Fixtures61, IoStatIocostKeys) {
  auto r = parseIoStat(slurp(kKernel61 / "io.stat-root-iocost"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].other.at("cost.vrate"), "100.00");
  EXPECT_EQ((*r)[1].get("cost.usage"), 0u);
  EXPECT_EQ((*r)[1].get("dbytes"), 1073745920u);
}

TEST(Fixtures61, MemoryStatDirtyAndWriteback) {
  auto during = parseMemoryStat(slurp(kKernel61 / "memory.stat-during-sync"));
  ASSERT_TRUE(during.ok()) << during.error().message;
  EXPECT_EQ(during->fileDirty(), 8192u);
  EXPECT_EQ(during->fileWriteback(), 8388608u);
  EXPECT_GT(during->values.size(), 40u);
}

TEST(Fixtures61, Pressure) {
  auto r = parsePsi(slurp(kKernel61 / "io.pressure"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->some.avg10, 18.55);
  EXPECT_EQ(r->some.totalUsec, 7993901u);
  ASSERT_TRUE(r->full.has_value());
  auto sys = parsePsi(slurp(kKernel61 / "proc-pressure-io-during-sync"));
  ASSERT_TRUE(sys.ok());
  EXPECT_EQ(sys->full->totalUsec, 689718u);
}

TEST(Fixtures61, CgroupEvents) {
  auto p = parseCgroupEvents(slurp(kKernel61 / "cgroup.events"));
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->populated);
  auto u = parseCgroupEvents(slurp(kKernel61 / "cgroup.events-unpopulated"));
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->populated);
}

TEST(Fixtures61, BlockedSyncInProcfs) {
  auto st = parseProcStat(slurp(kKernel61 / "proc-sync" / "stat"));
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->pid, 180);
  EXPECT_EQ(st->comm, "sync");
  EXPECT_EQ(st->state, 'D');
  EXPECT_EQ(st->ppid, 145);
  EXPECT_EQ(st->startTimeTicks, 5501u);

  auto sc = parseProcSyscall(slurp(kKernel61 / "proc-sync" / "task-syscall"));
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  EXPECT_EQ(sc->kind, ProcSyscall::Kind::InSyscall);
  EXPECT_EQ(sc->nr, 162);  // x86_64 sync
  EXPECT_EQ(sc->pc, 0x7fe750fd3ca7u);

  auto cg = parseProcCgroupV2(slurp(kKernel61 / "proc-sync" / "task-cgroup"));
  ASSERT_TRUE(cg.ok());
  EXPECT_EQ(cg->value(), "/cg2");

  auto sleep = parseProcStat(slurp(kKernel61 / "proc-sleep" / "stat"));
  ASSERT_TRUE(sleep.ok());
  EXPECT_EQ(sleep->state, 'S');
  auto ns = parseProcSyscall(slurp(kKernel61 / "proc-sleep" / "syscall"));
  ASSERT_TRUE(ns.ok());
  EXPECT_EQ(ns->nr, 230);  // clock_nanosleep
}

TEST(Fixtures61, MountInfo) {
  auto r = parseMountInfo(slurp(kKernel61 / "mountinfo"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  bool sawScratch = false, sawCgroup2 = false;
  for (const auto& m : *r) {
    if (m.mountPoint == "/mnt/scratch") {
      sawScratch = true;
      EXPECT_EQ(m.dev, (DevNum{254, 0}));
      EXPECT_EQ(m.fsType, "ext4");
      EXPECT_EQ(m.source, "/dev/vda");
    }
    if (m.fsType == "cgroup2") {
      sawCgroup2 = true;
      EXPECT_EQ(m.mountPoint, "/sys/fs/cgroup");
    }
  }
  EXPECT_TRUE(sawScratch);
  EXPECT_TRUE(sawCgroup2);
}

TEST(Fixtures61, TraceOfSyncInversion) {
  std::istringstream in(slurp(kKernel61 / "tracefs" / "trace-sync-inversion"));
  std::string line;
  std::vector<TraceEvent> events;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto r = parseTraceLine(line);
    ASSERT_TRUE(r.ok()) << r.error().message;
    events.push_back(std::move(*r));
  }
  ASSERT_GE(events.size(), 4u);
  using Kind = TraceEvent::Kind;
  EXPECT_EQ(events[0].kind, Kind::SyscallEnter);
  EXPECT_EQ(events[0].syscall, "sync");
  EXPECT_EQ(events[0].tid, 180);
  EXPECT_EQ(events[0].comm, "sync");
  EXPECT_EQ(events[0].timestampUsec, 56391987u);
  EXPECT_EQ(events[1].kind, Kind::WritebackQueue);
  EXPECT_EQ(events[1].reason, "sync");
  EXPECT_EQ(events[1].cgroupIno, 23u);  // meta.json cg1_ino
  EXPECT_EQ(events[1].bdi, (DevNum{254, 0}));
  EXPECT_EQ(events[2].kind, Kind::SyscallExit);
  EXPECT_EQ(events[2].ret, 0);
  bool sawSyncfs = false;
  for (const auto& e : events) {
    if (e.kind == Kind::SyscallEnter && e.syscall == "syncfs") {
      sawSyncfs = true;
      EXPECT_EQ(e.fd, 3);
    }
  }
  EXPECT_TRUE(sawSyncfs);
}

// Kernel 6.12 (Debian 13's, captured by the same scenario): the differences from 6.1 that the
// parsers must absorb, each by name.

std::vector<TraceEvent> traceEvents(const fs::path& file) {
  std::istringstream in(slurp(file));
  std::string line;
  std::vector<TraceEvent> events;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto r = parseTraceLine(line);
    EXPECT_TRUE(r.ok()) << r.error().message << " in " << line;
    if (r.ok()) events.push_back(std::move(*r));
  }
  return events;
}

// 6.12 prints the syscall events with a preempt-count digit in the irq-info flags ("...1."
// where 6.1 had "....."): the flags column is skipped by shape, never matched literally.
TEST(Fixtures612, TraceFlagsColumnChanged) {
  auto events = traceEvents(kKernel612 / "tracefs" / "trace-sync-inversion");
  ASSERT_GE(events.size(), 4u);
  using Kind = TraceEvent::Kind;
  EXPECT_EQ(events[0].kind, Kind::SyscallEnter);
  EXPECT_EQ(events[0].syscall, "sync");
  EXPECT_EQ(events[0].tid, 210);
  EXPECT_EQ(events[0].timestampUsec, 13235725u);
  EXPECT_EQ(events[1].kind, Kind::WritebackQueue);
  EXPECT_EQ(events[1].cgroupIno, 28u);  // meta.json cg1_ino
  EXPECT_EQ(events[2].kind, Kind::SyscallExit);
  EXPECT_EQ(events[3].syscall, "syncfs");
  EXPECT_EQ(events[3].fd, 3);
}

// Tracepoint IDs are not stable across kernels (writeback_queue: 852 on 6.1, 948 on 6.12):
// the daemon enables events by name (events/<group>/<name>/enable), never by ID.
TEST(Fixtures612, TracepointIdsDifferSoEventsAreNamed) {
  auto idOf = [](const fs::path& format) {
    std::istringstream in(slurp(format));
    std::string line;
    while (std::getline(in, line))
      if (startsWith(line, "ID: ")) return std::stoi(line.substr(4));
    return -1;
  };
  for (const char* ev : {"format-writeback_queue", "format-sys_enter_sync"}) {
    const int a = idOf(kKernel61 / "tracefs" / ev), b = idOf(kKernel612 / "tracefs" / ev);
    EXPECT_GT(a, 0);
    EXPECT_GT(b, 0);
    EXPECT_NE(a, b) << ev;
  }
}

// memory.stat grew 14 keys between 6.1 and 6.12 (pgdemote_*, zswpwb, thp_swpout, numa_*...):
// parsed by name, extra keys kept, the two the daemon reads found.
TEST(Fixtures612, MemoryStatAddedKeys) {
  auto old = parseMemoryStat(slurp(kKernel61 / "memory.stat-during-sync"));
  auto now = parseMemoryStat(slurp(kKernel612 / "memory.stat-during-sync"));
  ASSERT_TRUE(old.ok() && now.ok());
  EXPECT_GT(now->values.size(), old->values.size());
  EXPECT_EQ(now->values.count("zswpwb"), 1u);
  EXPECT_EQ(old->values.count("zswpwb"), 0u);
  EXPECT_EQ(now->fileWriteback(), 8388608u);
}

// io.max and io.stat print the same keys on both kernels (the 6.10 blk-throttle rework
// changed the internals, not the file; its zero read-back bug is handled by the executor:
// ExecutorTest.IoMaxZeroReadAfterBlkThrottleReworkIsNeverAnOriginal).
TEST(Fixtures612, IoMaxAndIoStatUnchanged) {
  for (const char* f : {"io.max", "io.max-all-keys", "io.max-two-devices"}) {
    auto a = parseIoMax(slurp(kKernel61 / f)), b = parseIoMax(slurp(kKernel612 / f));
    ASSERT_TRUE(a.ok() && b.ok()) << f;
    EXPECT_EQ(*a, *b) << f;
  }
  auto st = parseIoStat(slurp(kKernel612 / "io.stat-during-sync"));
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_EQ(st->size(), 2u);
  EXPECT_TRUE((*st)[0].counters.empty());  // "253:0 ": a device line without keys, as on 6.1
  EXPECT_EQ((*st)[1].get("wbytes"), 1048576u);
}

}  // namespace
}  // namespace cxiosync
