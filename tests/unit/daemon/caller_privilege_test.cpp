// SPDX-License-Identifier: GPL-2.0-or-later
// The uid-0 shortcut (audit L5, issue 25): CAP_SYS_ADMIN in the caller's effective set, in the
// daemon's user namespace, read from a process pinned by its start time or the bus's pidfd.
#include "daemon/kernel/caller_privilege.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

using namespace cxiosync;
namespace fs = std::filesystem;

namespace {

std::string status(uint32_t euid, const std::string& capEff) {
  return "Name:\tcxiosyncctl\nPid:\t77\nUid:\t" + std::to_string(euid) + "\t" +
         std::to_string(euid) + "\t" + std::to_string(euid) + "\t" + std::to_string(euid) +
         "\nCapInh:\t0000000000000000\nCapPrm:\t" + capEff + "\nCapEff:\t" + capEff +
         "\nCapBnd:\t000001ffffffffff\n";
}

std::string stat(int pid, uint64_t start) {
  // A comm with ") S" in it: the start time is found after the last ')'.
  return std::to_string(pid) + " (a) S 1 (b) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " +
         std::to_string(start) + " 0 0\n";
}

constexpr const char* kFull = "000001ffffffffff";

class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/callerpriv-test.XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
    fs::create_directories(dir_ / "self/ns");
    std::ofstream(dir_ / "self/ns/user") << "the daemon's user namespace";
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A process in the daemon's user namespace (ns/user is the same inode as self's) or in
  // another one.
  void process(int pid, const std::string& text, bool ourNs = true, uint64_t start = 1000) {
    const fs::path p = dir_ / std::to_string(pid);
    fs::create_directories(p / "ns");
    std::ofstream(p / "status") << text;
    std::ofstream(p / "stat") << stat(pid, start);
    if (ourNs)
      fs::create_hard_link(dir_ / "self/ns/user", p / "ns/user");
    else
      std::ofstream(p / "ns/user") << "a user namespace of its own";
  }
  std::string problem(int pid, int pidfd = -1) {
    return rootCallerProblem(pid, pidfd, dir_.string());
  }
  fs::path dir_;
};

int pidfdOpen(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

// A child that waits to be killed.
pid_t sleeper() {
  pid_t c = ::fork();
  if (c == 0) {
    ::pause();
    ::_exit(0);
  }
  return c;
}

}  // namespace

TEST(CallerPrivilege, CapEffIsTheEffectiveSetInHex) {
  EXPECT_EQ(*parseStatusCapEff(status(0, "000001fffeffffff")), 0x000001fffeffffffull);
  EXPECT_EQ(*parseStatusCapEff("CapEff:\t0000000000200000\n"), uint64_t{1} << kCapSysAdmin);
  EXPECT_EQ(*parseStatusCapEff("CapEff:\t0"), 0u) << "last line without a newline";
  for (const char* bad : {"", "Name:\tx\n", "CapEff:\t\n", "CapEff:\tzz\n", "CapEff:\t12 34\n",
                          "CapEff:\t1ffffffffffffffff\n" /* more than 64 bits */,
                          "CapPrm:\tffffffffffffffff\n", "Name:\tCapEff:\tff\n"}) {
    EXPECT_FALSE(parseStatusCapEff(bad)) << bad;
  }
}

TEST(CallerPrivilege, FdinfoPid) {
  EXPECT_EQ(*parseFdinfoPid("pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1\nPid:\t4242\n"
                            "NSpid:\t4242\n"),
            4242);
  EXPECT_EQ(*parseFdinfoPid("Pid:\t-1\n"), -1) << "reaped";
  for (const char* bad : {"", "NSpid:\t1\n", "Pid:\t\n", "Pid:\t12x\n", "x Pid:\t1\n"})
    EXPECT_FALSE(parseFdinfoPid(bad)) << bad;
}

TEST_F(FakeProc, RootWithSysAdminInTheDaemonsUserNamespaceIsTrusted) {
  process(10, status(0, kFull));
  process(11, status(0, "0000000000200000"));
  EXPECT_EQ(problem(10), "");
  EXPECT_EQ(problem(11), "") << "CAP_SYS_ADMIN alone is enough";
}

TEST_F(FakeProc, RootOfAnotherUserNamespaceIsNot) {
  // `unshare -Ur` by a container's root: full CapEff, uid 0 to the bus, another namespace.
  process(12, status(0, kFull), /*ourNs=*/false);
  EXPECT_NE(problem(12).find("another user namespace"), std::string::npos) << problem(12);
  fs::remove(dir_ / "12/ns/user");
  EXPECT_NE(problem(12), "") << "no ns/user link: not trusted";
}

TEST_F(FakeProc, RootWithoutSysAdminOrNotRootOrGoneIsNot) {
  process(20, status(0, "00000000a80425fb"));  // docker's default set: no CAP_SYS_ADMIN
  process(21, status(1000, kFull));
  process(22, "Name:\tx\nUid:\t0\t0\t0\t0\n");  // no CapEff line
  process(24, status(0, kFull));
  fs::remove(dir_ / "24/stat");  // no start time: cannot be pinned
  EXPECT_NE(problem(20).find("without CAP_SYS_ADMIN"), std::string::npos) << problem(20);
  EXPECT_NE(problem(21).find("runs as uid 1000"), std::string::npos) << problem(21);
  EXPECT_NE(problem(22).find("no CapEff"), std::string::npos) << problem(22);
  EXPECT_NE(problem(23).find("gone"), std::string::npos) << problem(23);
  EXPECT_NE(problem(24).find("gone"), std::string::npos) << problem(24);
  EXPECT_NE(problem(0).find("no pid"), std::string::npos) << problem(0);
}

TEST_F(FakeProc, APidWhoseStartTimeChangesBetweenTheReadsIsAnotherProcess) {
  process(30, status(0, kFull), true, 5000);
  auto pinned = PinnedProcess::open(30, -1, dir_.string());
  ASSERT_TRUE(pinned) << pinned.error().message;
  EXPECT_TRUE(pinned->stillSame());
  std::ofstream(dir_ / "30/stat") << stat(30, 5001);  // the pid now names a newer process
  auto same = pinned->stillSame();
  ASSERT_FALSE(same);
  EXPECT_EQ(same.error().code, ESRCH);
  fs::remove(dir_ / "30/stat");
  EXPECT_FALSE(pinned->stillSame()) << "gone";
}

// The bus's pidfd (dbus >= 1.15, dbus-broker): once its process has exited, whatever /proc
// shows at that pid now (here: privileged root) answers for someone else.
TEST_F(FakeProc, ADeadPidfdProcessIsNotTheCallerWhateverItsPidShowsNow) {
  pid_t child = sleeper();
  ASSERT_GT(child, 0);
  int pidfd = pidfdOpen(child);
  if (pidfd < 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    GTEST_SKIP() << "no pidfd_open (Linux < 5.3)";
  }
  process(child, status(0, kFull));
  EXPECT_EQ(problem(child, pidfd), "") << "alive, with that pid: the reads described it";
  // A pidfd for another process than the pid the bus named.
  process(child + 1, status(0, kFull));
  EXPECT_NE(problem(child + 1, pidfd).find("another process"), std::string::npos);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_NE(problem(child, pidfd).find("exited"), std::string::npos) << problem(child, pidfd);
  ::close(pidfd);
}

TEST(CallerPrivilege, TheRealProcAgreesWithCapget) {
  // This process through the real /proc: the answer must match what the kernel says of us.
  const std::string p = rootCallerProblem(::getpid(), -1);
  if (::geteuid() != 0) {
    EXPECT_NE(p.find("not root"), std::string::npos) << p;
    return;
  }
  std::ifstream in("/proc/self/status");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool admin = (*parseStatusCapEff(text) >> kCapSysAdmin) & 1;
  EXPECT_EQ(p.empty(), admin) << p;
  int pidfd = pidfdOpen(::getpid());
  if (pidfd >= 0) {
    EXPECT_EQ(rootCallerProblem(::getpid(), pidfd).empty(), admin);
    ::close(pidfd);
  }
}

// The real kernel: a child of ours that enters a new user namespace keeps uid 0 (as our /proc
// shows it) and gets a full CapEff, but is not trusted.
TEST(CallerPrivilege, TheRealKernelsNewUserNamespaceIsNotTheDaemons) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the child must be uid 0)";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    char ok = ::unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char ok = 'n';
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  const std::string p = rootCallerProblem(child, -1);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  if (ok != 'y') GTEST_SKIP() << "unshare(CLONE_NEWUSER) refused here";
  EXPECT_NE(p.find("another user namespace"), std::string::npos) << p;
}
