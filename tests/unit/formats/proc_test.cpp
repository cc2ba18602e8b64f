// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/proc.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

// Fields after the comm, from a real 6.1 /proc/PID/stat (52 fields in total).
constexpr const char* kTail =
    " D 120 133 120 34816 133 4194304 113 0 0 0 0 3 0 0 20 0 1 0 2345 2752512 203 "
    "18446744073709551615 94250440142848 94250440160625 140725897718576 0 0 0 0 0 0 1 0 0 17 "
    "1 0 0 0 0 0 94250440175312 94250440176672 94250466775040 140725897721655 "
    "140725897721660 140725897721660 140725897723887 0\n";

TEST(ProcStat, ParsesRealLine) {
  auto r = parseProcStat(std::string("133 (sync)") + kTail);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->pid, 133);
  EXPECT_EQ(r->comm, "sync");
  EXPECT_EQ(r->state, 'D');
  EXPECT_EQ(r->ppid, 120);
  EXPECT_EQ(r->startTimeTicks, 2345u);
}

TEST(ProcStat, CommWithSpacesAndParentheses) {
  for (std::string comm : {"a b", "x) S 1 (", ")", "(", "((", "))) R 5 ", "", " lead", "a\nb",
                           "kworker/0:1-events", "\xff\xfe"}) {
    auto r = parseProcStat("42 (" + comm + ")" + kTail);
    ASSERT_TRUE(r.ok()) << comm << ": " << r.error().message;
    EXPECT_EQ(r->comm, comm);
    EXPECT_EQ(r->state, 'D');
    EXPECT_EQ(r->pid, 42);
    EXPECT_EQ(r->startTimeTicks, 2345u);
  }
}

TEST(ProcStat, MinimalTwentyTwoFieldsNoNewline) {
  auto r =
      parseProcStat("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 18446744073709551615");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->ppid, 0);
  EXPECT_EQ(r->state, 'S');
  EXPECT_EQ(r->startTimeTicks, UINT64_MAX);
}

TEST(ProcStat, AllStates) {
  for (char s : std::string("RSDZTtXxKWPIi")) {
    auto r = parseProcStat(std::string("7 (c) ") + s + " 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99");
    ASSERT_TRUE(r.ok()) << s;
    EXPECT_EQ(r->state, s);
  }
}

TEST(ProcStat, RejectsHostileInput) {
  const std::string bad[] = {
      "",
      "\n",
      "133 sync D 1",
      "133 (sync D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "133 sync) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      ") 133 ( D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "133 (sync) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0",  // 21 fields: no starttime
      "133 (sync) D",
      "133 (sync)",
      "(sync) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "-133 (sync) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "0 (sync) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "x (sync) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "99999999999999999999 (sync) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "133 (sync) DD 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "133 (sync) 1 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "133 (sync) D -1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "133 (sync) D x 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
      "133 (sync) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -99",
      "133 (sync) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 18446744073709551616",
      std::string("133 (sy\0nc) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99", 54),
  };
  for (const auto& b : bad) {
    auto r = parseProcStat(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("/proc stat: line 1: ", 0), 0u) << r.error().message;
    }
  }
}

TEST(ProcSyscall, Running) {
  auto r = parseProcSyscall("running\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, ProcSyscall::Kind::Running);
}

TEST(ProcSyscall, InSyscallFullForm) {
  auto r = parseProcSyscall(
      "162 0x7ffd4a1b2c3d 0x0 0x1 0xffffffffffffffff 0x7f00 0xa 0x7ffd4a1b2000 0x7f1e2d3c4b5a\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, ProcSyscall::Kind::InSyscall);
  EXPECT_EQ(r->nr, 162);
  EXPECT_EQ(r->args[0], 0x7ffd4a1b2c3dULL);
  EXPECT_EQ(r->args[1], 0u);
  EXPECT_EQ(r->args[2], 1u);
  EXPECT_EQ(r->args[3], UINT64_MAX);
  EXPECT_EQ(r->args[4], 0x7f00u);
  EXPECT_EQ(r->args[5], 0xau);
  EXPECT_EQ(r->sp, 0x7ffd4a1b2000ULL);
  EXPECT_EQ(r->pc, 0x7f1e2d3c4b5aULL);
}

TEST(ProcSyscall, SyscallZeroAndUppercaseHex) {
  auto r = parseProcSyscall("0 0x3 0xABC 0x0 0x0 0x0 0x0 0x1 0X2");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->nr, 0);
  EXPECT_EQ(r->args[1], 0xabcu);
  EXPECT_EQ(r->pc, 2u);
}

TEST(ProcSyscall, NotInSyscall) {
  auto r = parseProcSyscall("-1 0x7ffc8d9e0a18 0x7f3a5b6c7d8e\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, ProcSyscall::Kind::NotInSyscall);
  EXPECT_EQ(r->nr, -1);
  EXPECT_EQ(r->sp, 0x7ffc8d9e0a18ULL);
  EXPECT_EQ(r->pc, 0x7f3a5b6c7d8eULL);
  auto other = parseProcSyscall("-22 0x1 0x2");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->kind, ProcSyscall::Kind::NotInSyscall);
}

TEST(ProcSyscall, RejectsHostileInput) {
  const std::string bad[] = {
      "",
      "\n",
      "running now",
      "Running",
      "162",
      "162 0x0 0x0 0x0 0x0 0x0 0x0 0x0",          // 7 values
      "162 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0",  // 9 values
      "-1 0x0",
      "-1 0x0 0x0 0x0",
      "-1 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0",
      "162 0 0 0 0 0 0 0 0",  // no 0x
      "162 0x 0x0 0x0 0x0 0x0 0x0 0x0 0x0",
      "162 0xg 0x0 0x0 0x0 0x0 0x0 0x0 0x0",
      "162 -0x1 0x0 0x0 0x0 0x0 0x0 0x0 0x0",
      "162 0x10000000000000000 0x0 0x0 0x0 0x0 0x0 0x0 0x0",
      "99999999999999999999 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0",
      "+162 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0",
      "0xa2 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0",
      "running\nrunning\n",
      "162 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0\n\n",
      std::string("running\0", 8),
  };
  for (const auto& b : bad) {
    auto r = parseProcSyscall(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("/proc syscall: line ", 0), 0u) << r.error().message;
    }
  }
}

TEST(ProcCgroup, PureV2) {
  auto r = parseProcCgroupV2("0::/system.slice/cxiosyncd.service\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(**r, "/system.slice/cxiosyncd.service");
}

TEST(ProcCgroup, HybridSystem) {
  constexpr const char* kHybrid =
      "12:rdma:/\n"
      "11:memory:/user.slice/user-0.slice/session-1.scope\n"
      "10:blkio:/user.slice\n"
      "9:cpu,cpuacct:/user.slice\n"
      "1:name=systemd:/user.slice/user-0.slice/session-1.scope\n"
      "0::/user.slice/user-0.slice/session-1.scope\n";
  auto v2 = parseProcCgroupV2(kHybrid);
  ASSERT_TRUE(v2.ok()) << v2.error().message;
  EXPECT_EQ(v2->value(), "/user.slice/user-0.slice/session-1.scope");
  auto all = parseProcCgroup(kHybrid);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->v1.size(), 5u);
  EXPECT_EQ(all->v1[0].hierarchyId, 12u);
  EXPECT_EQ(all->v1[0].controllers, "rdma");
  EXPECT_EQ(all->v1[3].controllers, "cpu,cpuacct");
  EXPECT_EQ(all->v1[4].controllers, "name=systemd");
  EXPECT_FALSE(all->v2->deleted);
}

TEST(ProcCgroup, PureV1AndEmpty) {
  auto r = parseProcCgroupV2("4:memory:/\n1:name=systemd:/init.scope\n");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  auto e = parseProcCgroupV2("");
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->has_value());
}

TEST(ProcCgroup, DeletedSuffixColonsAndNamespaces) {
  auto d = parseProcCgroup("0::/cg1 (deleted)\n");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->v2->path, "/cg1");
  EXPECT_TRUE(d->v2->deleted);
  EXPECT_EQ(parseProcCgroupV2("0::/cg1 (deleted)")->value(), "/cg1");
  EXPECT_EQ(parseProcCgroupV2("0::/a:b:c\n")->value(), "/a:b:c");
  EXPECT_EQ(parseProcCgroupV2("0::/../../other.slice\n")->value(), "/../../other.slice");
  EXPECT_EQ(parseProcCgroupV2("0::/\r\n")->value(), "/");
  EXPECT_EQ(parseProcCgroupV2("0::/with space/x\n")->value(), "/with space/x");
}

TEST(ProcCgroup, RejectsHostileInput) {
  const std::string bad[] = {
      "0:/x\n",
      "0::\n",
      "0::x\n",
      "::/x\n",
      "a::/x\n",
      "-1::/x\n",
      "4294967296:memory:/\n",
      "0::/a\n0::/b\n",
      "garbage\n",
      std::string("0::/a\0b\n", 8),
  };
  for (const auto& b : bad) {
    auto r = parseProcCgroupV2(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("/proc cgroup: line ", 0), 0u) << r.error().message;
    }
  }
  auto second = parseProcCgroup("1:name=systemd:/\n0::/a\n0::/b\n");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("line 3"), std::string::npos);
}

}  // namespace
}  // namespace cxiosync
