// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/trace_event.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

using Kind = TraceEvent::Kind;

TEST(TraceEvent, SyncEnter) {
  auto r = parseTraceLine("            sync-133     [001] .....    12.345678: sys_sync()\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, Kind::SyscallEnter);
  EXPECT_EQ(r->comm, "sync");
  EXPECT_EQ(r->tid, 133);
  EXPECT_EQ(r->cpu, 1u);
  EXPECT_EQ(r->timestampUsec, 12345678u);
  EXPECT_EQ(r->syscall, "sync");
  EXPECT_FALSE(r->fd.has_value());
  EXPECT_FALSE(r->ret.has_value());
  EXPECT_TRUE(r->args.empty());
  EXPECT_FALSE(r->tgid.has_value());
  EXPECT_EQ(r->body, "sys_sync()");
}

TEST(TraceEvent, SyncExit) {
  auto r = parseTraceLine("            sync-133     [001] .....    12.345999: sys_sync -> 0x0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, Kind::SyscallExit);
  EXPECT_EQ(r->syscall, "sync");
  EXPECT_EQ(r->ret, 0);
}

TEST(TraceEvent, NegativeReturn) {
  auto r = parseTraceLine(
      "          syncfs-200     [000] d..1.  1000.000001: sys_syncfs -> 0xfffffffffffffffb");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, Kind::SyscallExit);
  EXPECT_EQ(r->syscall, "syncfs");
  EXPECT_EQ(r->ret, -5);
  EXPECT_EQ(r->timestampUsec, 1000000001u);
}

TEST(TraceEvent, EnterWithFd) {
  auto r = parseTraceLine("              sh-77      [003] .....   345.000100: sys_syncfs(fd: 3)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, Kind::SyscallEnter);
  EXPECT_EQ(r->syscall, "syncfs");
  EXPECT_EQ(r->fd, 3);
  ASSERT_EQ(r->args.size(), 1u);
  EXPECT_EQ(r->args[0].first, "fd");
  EXPECT_EQ(r->args[0].second, 3u);
}

TEST(TraceEvent, EnterArgsAreHexWithOrWithoutPrefix) {
  auto r = parseTraceLine(
      "        postgres-9001    [000] .....    1.000000: sys_sync_file_range(fd: 1a, offset: 0, "
      "nbytes: 1000, flags: 0x7)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->syscall, "sync_file_range");
  EXPECT_EQ(r->fd, 26);
  ASSERT_EQ(r->args.size(), 4u);
  EXPECT_EQ(r->args[2].first, "nbytes");
  EXPECT_EQ(r->args[2].second, 0x1000u);
  EXPECT_EQ(r->args[3].second, 7u);
  auto p = parseTraceLine("   x-1 [000] ..... 1.000000: sys_fsync(fd: 0x5)");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->fd, 5);
}

TEST(TraceEvent, FdIsLow32BitsSigned) {
  auto r = parseTraceLine("   x-1 [000] ..... 1.000000: sys_syncfs(fd: ffffffffffffffff)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->fd, -1);
  auto u = parseTraceLine("   x-1 [000] ..... 1.000000: sys_syncfs(fd: ffffffff)");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->fd, -1);
}

TEST(TraceEvent, VerboseArgTypes) {
  auto r = parseTraceLine(
      "   x-1 [000] ..... 1.000000: sys_msync(unsigned long start: 7f0000000000, size_t len: "
      "1000, int flags: 4)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->syscall, "msync");
  ASSERT_EQ(r->args.size(), 3u);
  EXPECT_EQ(r->args[0].first, "start");
  EXPECT_EQ(r->args[2].first, "flags");
  EXPECT_EQ(r->args[2].second, 4u);
  EXPECT_FALSE(r->fd.has_value());
}

TEST(TraceEvent, WritebackQueue) {
  auto r = parseTraceLine(
      "            sync-133     [001] .....    12.345700: writeback_queue: bdi 254:0: sb_dev "
      "254:0 nr_pages=9223372036854775807 sync_mode=1 kupdate=0 range_cyclic=0 background=0 "
      "reason=sync cgroup_ino=23");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, Kind::WritebackQueue);
  EXPECT_EQ(r->bdi, (DevNum{254, 0}));
  EXPECT_EQ(r->bdiName, "254:0");
  EXPECT_EQ(r->sbDev, (DevNum{254, 0}));
  EXPECT_EQ(r->nrPages, INT64_MAX);
  EXPECT_EQ(r->syncMode, 1);
  EXPECT_EQ(r->reason, "sync");
  EXPECT_EQ(r->cgroupIno, 23u);
}

TEST(TraceEvent, WritebackQueueNonNumericBdiAndNoCgroup) {
  auto r = parseTraceLine(
      "   kworker/u4:2-55      [000] .....    3.000000: writeback_queue: bdi btrfs-1: sb_dev "
      "0:45 nr_pages=-1 sync_mode=0 kupdate=0 range_cyclic=1 background=1 reason=background");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->comm, "kworker/u4:2");
  EXPECT_FALSE(r->bdi.has_value());
  EXPECT_EQ(r->bdiName, "btrfs-1");
  EXPECT_EQ(r->nrPages, -1);
  EXPECT_EQ(r->reason, "background");
  EXPECT_FALSE(r->cgroupIno.has_value());
}

TEST(TraceEvent, CommWithSpacesDashesAndParens) {
  auto r = parseTraceLine(" my-app (x) 2-1234    [002] .N.1.    99.000001: sys_sync()");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->comm, "my-app (x) 2");
  EXPECT_EQ(r->tid, 1234);
  EXPECT_EQ(r->cpu, 2u);
  auto dash = parseTraceLine("            sync--5     [001] .....    12.345678: sys_sync()");
  ASSERT_TRUE(dash.ok()) << dash.error().message;
  EXPECT_EQ(dash->comm, "sync-");
  EXPECT_EQ(dash->tid, 5);
  auto odd = parseTraceLine("  a [1] b-c-42     [000] ..... 5.000000: sys_sync()");
  ASSERT_TRUE(odd.ok()) << odd.error().message;
  EXPECT_EQ(odd->comm, "a [1] b-c");
  EXPECT_EQ(odd->tid, 42);
  auto unknown = parseTraceLine("           <...>-4242    [000] ..... 5.000000: sys_sync()");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->comm, "<...>");
  auto empty = parseTraceLine("                -4242    [000] ..... 5.000000: sys_sync()");
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_EQ(empty->comm, "");
}

TEST(TraceEvent, FlagsColumnOptionalAndOldWidth) {
  auto none = parseTraceLine("            sync-133     [001]    12.345678: sys_sync()");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(none->kind, Kind::SyscallEnter);
  EXPECT_EQ(none->timestampUsec, 12345678u);
  auto old = parseTraceLine("            sync-133   [001] d..1    12.345678: sys_sync()");
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->kind, Kind::SyscallEnter);
}

TEST(TraceEvent, RecordTgidColumn) {
  auto r =
      parseTraceLine("            sync-133     (    130) [001] .....    12.345678: sys_sync()");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tid, 133);
  EXPECT_EQ(r->tgid, 130u);
  auto u =
      parseTraceLine("            sync-133     (-------) [001] .....    12.345678: sys_sync()");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_FALSE(u->tgid.has_value());
  EXPECT_EQ(u->comm, "sync");
}

TEST(TraceEvent, CounterClockTimestamp) {
  auto r = parseTraceLine("            sync-133     [001] ..... 123456789012: sys_sync()");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->timestampUsec, 123456789012u);
}

TEST(TraceEvent, LostEvents) {
  auto r = parseTraceLine("CPU:1 [LOST 1234 EVENTS]\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, Kind::LostEvents);
  EXPECT_EQ(r->cpu, 1u);
  EXPECT_EQ(r->lostEvents, 1234u);
  auto u = parseTraceLine("CPU:3 [LOST EVENTS]");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u->kind, Kind::LostEvents);
  EXPECT_EQ(u->lostEvents, 0u);
}

TEST(TraceEvent, CommLookingLikeLostMarkerIsAnEvent) {
  auto r = parseTraceLine("   CPU:1 [LOST x-77      [000] .....     1.000000: sys_sync()");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, Kind::SyscallEnter);
  EXPECT_EQ(r->comm, "CPU:1 [LOST x");
  EXPECT_EQ(r->tid, 77);
  auto m = parseTraceLine("CPU:0 [LOST 3 EVENTS]  ");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->kind, Kind::LostEvents);
  EXPECT_EQ(m->lostEvents, 3u);
}

TEST(TraceEvent, OtherEvents) {
  for (const char* line :
       {"          <idle>-0       [000] d.h2.   100.000000: sched_wakeup: comm=sync pid=133",
        "            sync-133     [001] .....    12.345800: writeback_start: bdi 254:0: x",
        "            sync-133     [001] .....    12.345800: sys_enter: NR 162 (0, 0, 0, 0, 0, 0)",
        "            sync-133     [001] .....    12.345800: sys_exit: NR 162 = 0",
        "            sync-133     [001] .....    12.345800: sys_",
        "            sync-133     [001] .....    12.345800: ",
        "            sync-133     [001] .....    12.345800:"}) {
    auto r = parseTraceLine(line);
    ASSERT_TRUE(r.ok()) << line << ": " << r.error().message;
    EXPECT_EQ(r->kind, Kind::Other) << line;
    EXPECT_EQ(r->tid, r->comm == "<idle>" ? 0 : 133) << line;
  }
}

TEST(TraceEvent, RejectsNonTraceLines) {
  const std::string bad[] = {
      "",
      "\n",
      "   ",
      "# tracer: nop",
      "garbage",
      "sync-133 sys_sync()",
      "            sync-133     [001] .....    12.345678 sys_sync()",  // no ':'
      "            sync-133     [001] .....    abc: sys_sync()",
      "            sync-133     [001] .....    1.2.3: sys_sync()",
      "            sync-133     [001] .....    99999999999999999999.000000: sys_sync()",
      "            sync-133     [] .....    12.345678: sys_sync()",
      "            sync-133     [4294967296] .....    12.345678: sys_sync()",
      "            sync-x     [001] .....    12.345678: sys_sync()",
      "            sync133     [001] .....    12.345678: sys_sync()",
      "            sync-99999999999999999999     [001] .....    12.345678: sys_sync()",
      "            sync-133     [001] ..!..    12.345678: sys_sync()",
      "            sync-133     [001",
      "CPU:x [LOST 5 EVENTS]",
      "CPU:1 [LOST x EVENTS]",
      "CPU:1 [LOST 99999999999999999999 EVENTS]",
      "CPU:1 [LOST 5 EVENTS",
      std::string("            sync-133     [001] .....    12.345678: sys_sync(\0)", 62),
  };
  for (const auto& b : bad) {
    auto r = parseTraceLine(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("trace: ", 0), 0u) << r.error().message;
    }
  }
}

TEST(TraceEvent, RejectsMalformedInterpretedBodies) {
  const std::string prefix = "            sync-133     [001] .....    12.345678: ";
  const std::string bad[] = {
      "sys_sync(",
      "sys_syncfs(fd: 3",
      "sys_syncfs(fd)",
      "sys_syncfs(fd: )",
      "sys_syncfs(fd: xyz)",
      "sys_syncfs(fd: 3,)",
      "sys_syncfs(: 3)",
      "sys_syncfs(fd: 10000000000000000)",
      "sys_(fd: 3)",
      "sys_sync -> ",
      "sys_sync -> 0",
      "sys_sync -> 0x",
      "sys_sync -> -5",
      "sys_sync -> 0x10000000000000000",
      "sys_sync -> 0x0 trailing",
      "writeback_queue: ",
      "writeback_queue: bdi 254:0",
      "writeback_queue: bdi : sb_dev 1:1 reason=sync",
      "writeback_queue: bdi 254:0: sb_dev 254:0 nr_pages=1 sync_mode=1",  // no reason
      "writeback_queue: bdi 254:0: sb_dev reason=sync",
      "writeback_queue: bdi 254:0: sb_dev",
      "writeback_queue: bdi 254:0: sb_dev 254:0 reason=sync cgroup_ino=-1",
      "writeback_queue: bdi 254:0: sb_dev 254:0 reason=sync cgroup_ino=18446744073709551616",
      "writeback_queue: bdi 254:0: sb_dev 254:0 nr_pages=x reason=sync",
      "writeback_queue: bdi 254:0: sb_dev 254:0 reason=",
      "writeback_queue: bdi 254:0: sb_dev 254:0 junk reason=sync",
  };
  for (const auto& b : bad) {
    auto r = parseTraceLine(prefix + b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
  }
}

TEST(TraceEvent, HugeLineDoesNotBlowUp) {
  std::string line = "            sync-133     [001] .....    12.345678: sys_msync(";
  for (int i = 0; i < 10000; ++i) line += "a: 1, ";
  line += "b: 2)";
  auto r = parseTraceLine(line);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->args.size(), 10001u);
  std::string many(100000, '[');
  EXPECT_FALSE(parseTraceLine(" " + many).ok());
  std::string brackets;
  for (int i = 0; i < 5000; ++i) brackets += " [1]";
  EXPECT_FALSE(parseTraceLine(brackets).ok());
  std::string far(300, 'x');
  EXPECT_FALSE(parseTraceLine(far + "-1 [000] ..... 1.000000: sys_sync()").ok());
}

}  // namespace
}  // namespace cxiosync
