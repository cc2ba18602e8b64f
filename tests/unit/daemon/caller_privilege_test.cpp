// SPDX-License-Identifier: GPL-2.0-or-later
// The uid-0 shortcut's second question (audit L5): CAP_SYS_ADMIN in the caller's effective set.
#include "daemon/kernel/caller_privilege.h"

#include <gtest/gtest.h>
#include <stdlib.h>
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

class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/callerpriv-test.XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void process(int pid, const std::string& text) {
    fs::create_directories(dir_ / std::to_string(pid));
    std::ofstream(dir_ / std::to_string(pid) / "status") << text;
  }
  std::string problem(int pid) { return rootCallerProblem(pid, dir_.string()); }
  fs::path dir_;
};

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

TEST_F(FakeProc, RootWithSysAdminIsTrusted) {
  process(10, status(0, "000001ffffffffff"));
  process(11, status(0, "0000000000200000"));
  EXPECT_EQ(problem(10), "");
  EXPECT_EQ(problem(11), "") << "CAP_SYS_ADMIN alone is enough";
}

TEST_F(FakeProc, RootWithoutSysAdminOrNotRootOrGoneIsNot) {
  process(20, status(0, "00000000a80425fb"));  // docker's default set: no CAP_SYS_ADMIN
  process(21, status(1000, "000001ffffffffff"));
  process(22, "Name:\tx\nUid:\t0\t0\t0\t0\n");  // no CapEff line
  EXPECT_NE(problem(20).find("without CAP_SYS_ADMIN"), std::string::npos) << problem(20);
  EXPECT_NE(problem(21).find("runs as uid 1000"), std::string::npos) << problem(21);
  EXPECT_NE(problem(22).find("no CapEff"), std::string::npos) << problem(22);
  EXPECT_NE(problem(23).find("is gone"), std::string::npos) << problem(23);
  EXPECT_NE(problem(0).find("not known"), std::string::npos) << problem(0);
}

TEST(CallerPrivilege, TheRealProcAgreesWithCapget) {
  // This process through the real /proc: the answer must match what the kernel says of us.
  const std::string p = rootCallerProblem(::getpid());
  if (::geteuid() != 0) {
    EXPECT_NE(p.find("not root"), std::string::npos) << p;
    return;
  }
  std::ifstream in("/proc/self/status");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool admin = (*parseStatusCapEff(text) >> kCapSysAdmin) & 1;
  EXPECT_EQ(p.empty(), admin) << p;
}
