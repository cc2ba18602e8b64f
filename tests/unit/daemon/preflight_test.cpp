// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/app/preflight.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace cxiosync {
namespace {

namespace fs = std::filesystem;

class Preflight : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("cxiosync-preflight-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string root() const { return dir_.string(); }
  fs::path dir_;
};

const char* const kFix = "boot with systemd.unified_cgroup_hierarchy=1";

TEST_F(Preflight, Cgroup2RootWithIoPasses) {
  std::ofstream(dir_ / "cgroup.controllers") << "cpuset cpu io memory hugetlb pids rdma misc\n";
  EXPECT_TRUE(checkCgroupRoot(root()));
}

// Debian 10's default (and this dev host): v1 hierarchies at the root, cgroup2 at unified/
// without controllers. Old code: the daemon started and listed /blkio /cpu as cgroups.
TEST_F(Preflight, HybridLayoutIsRefusedNamingTheFix) {
  for (const char* d : {"blkio", "cpu", "memory", "unified"}) fs::create_directories(dir_ / d);
  std::ofstream(dir_ / "unified/cgroup.controllers") << "";
  auto st = checkCgroupRoot(root());
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("hybrid cgroup layout"), std::string::npos);
  EXPECT_NE(st.error().message.find(kFix), std::string::npos) << st.error().message;
  EXPECT_EQ(st.error().message.find('\n'), std::string::npos) << "one line";
}

TEST_F(Preflight, IoMissingFromTheControllersIsRefused) {
  std::ofstream(dir_ / "cgroup.controllers") << "cpuset cpu memory pids iostat\n";
  auto st = checkCgroupRoot(root());
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("'cpuset cpu memory pids iostat'"), std::string::npos);
  EXPECT_NE(st.error().message.find(kFix), std::string::npos);
  EXPECT_FALSE(checkCgroupRoot(root() + "/absent"));
}

TEST_F(Preflight, TracefsNeedsItsInstancesAndEvents) {
  auto st = checkTracefsRoot(root());
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("no tracefs at " + root()), std::string::npos);
  EXPECT_NE(st.error().message.find("detector: auto"), std::string::npos);
  fs::create_directories(dir_ / "instances");
  fs::create_directories(dir_ / "events");
  EXPECT_TRUE(checkTracefsRoot(root()));
}

}  // namespace
}  // namespace cxiosync
