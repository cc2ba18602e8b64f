#include "dbus/ctl/unit_name.h"

#include <gtest/gtest.h>

namespace cxiosync::ctl {
namespace {

std::string resolve(const char* arg) {
  auto r = resolveCgroupArg(arg);
  return r ? r->path : "ERR: " + r.error().message;
}

TEST(UnitName, Paths) {
  EXPECT_EQ(resolve("/"), "/");
  EXPECT_EQ(resolve("/a/b/"), "/a/b");
  EXPECT_EQ(resolve("a//b"), "/a/b");
  EXPECT_EQ(resolve("/system.slice/foo.service"), "/system.slice/foo.service");
  EXPECT_FALSE(resolveCgroupArg("/a/../b"));
  EXPECT_FALSE(resolveCgroupArg(""));
  EXPECT_FALSE(resolveCgroupArg(std::string("/a\x01")));
  EXPECT_FALSE(resolveCgroupArg("/a")->fromUnit);
}

TEST(UnitName, Slices) {
  EXPECT_EQ(resolve("-.slice"), "/");
  EXPECT_EQ(resolve("backup.slice"), "/backup.slice");
  EXPECT_EQ(resolve("a-b.slice"), "/a.slice/a-b.slice");
  EXPECT_EQ(resolve("a-b-c.slice"), "/a.slice/a-b.slice/a-b-c.slice");
  EXPECT_TRUE(resolveCgroupArg("a-b.slice")->fromUnit);
  EXPECT_FALSE(resolveCgroupArg("a-b.slice")->assumed);
  EXPECT_FALSE(resolveCgroupArg("-a.slice"));
  EXPECT_FALSE(resolveCgroupArg("a-.slice"));
  EXPECT_FALSE(resolveCgroupArg("a--b.slice"));
  EXPECT_FALSE(resolveCgroupArg("bad name.slice"));
  EXPECT_FALSE(resolveCgroupArg(".slice"));
}

TEST(UnitName, ServicesAndScopesAssumeTheDefaultSlice) {
  EXPECT_EQ(resolve("init.scope"), "/init.scope");
  EXPECT_FALSE(resolveCgroupArg("init.scope")->assumed);
  EXPECT_EQ(resolve("backup.service"), "/system.slice/backup.service");
  EXPECT_TRUE(resolveCgroupArg("backup.service")->assumed);
  EXPECT_EQ(resolve("getty@tty1.service"), "/system.slice/getty@tty1.service");
  EXPECT_FALSE(resolveCgroupArg("a b.service"));
}

}  // namespace
}  // namespace cxiosync::ctl
