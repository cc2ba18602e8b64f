// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include "policy/config/dropin.h"

namespace cxiosync {
namespace {

using Dirs = std::vector<std::string>;
const Dirs kPath = {"/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system"};

TEST(DropInDirs, PlainUnit) {
  EXPECT_EQ(dropInDirsFor("backup.slice", kPath),
            (Dirs{"/etc/systemd/system/backup.slice.d", "/run/systemd/system/backup.slice.d",
                  "/usr/lib/systemd/system/backup.slice.d", "/etc/systemd/system/slice.d",
                  "/run/systemd/system/slice.d", "/usr/lib/systemd/system/slice.d"}));
}

TEST(DropInDirs, DashPrefixesMostSpecificFirstPerSearchDir) {
  EXPECT_EQ(dropInDirsFor("a-b-c.slice", {"/etc/systemd/system", "/usr/lib/systemd/system"}),
            (Dirs{"/etc/systemd/system/a-b-c.slice.d", "/etc/systemd/system/a-b-.slice.d",
                  "/etc/systemd/system/a-.slice.d", "/usr/lib/systemd/system/a-b-c.slice.d",
                  "/usr/lib/systemd/system/a-b-.slice.d", "/usr/lib/systemd/system/a-.slice.d",
                  "/etc/systemd/system/slice.d", "/usr/lib/systemd/system/slice.d"}));
}

TEST(DropInDirs, UserSlicePrefix) {
  auto dirs = dropInDirsFor("user-1000.slice", {"/etc/systemd/system"});
  EXPECT_EQ(dirs, (Dirs{"/etc/systemd/system/user-1000.slice.d",
                        "/etc/systemd/system/user-.slice.d", "/etc/systemd/system/slice.d"}));
}

TEST(DropInDirs, ParentSliceDirIsNotInherited) {
  // a.slice.d configures a.slice only; a-b.slice sees a-.slice.d, never a.slice.d.
  auto dirs = dropInDirsFor("a-b.slice", {"/etc/systemd/system"});
  EXPECT_EQ(dirs, (Dirs{"/etc/systemd/system/a-b.slice.d", "/etc/systemd/system/a-.slice.d",
                        "/etc/systemd/system/slice.d"}));
  EXPECT_EQ(dropInDirsFor("a.slice", {"/etc/systemd/system"}),
            (Dirs{"/etc/systemd/system/a.slice.d", "/etc/systemd/system/slice.d"}));
}

TEST(DropInDirs, InstancesTemplatesAndOddNames) {
  EXPECT_EQ(dropInDirsFor("getty@tty1.service", {"/etc/systemd/system"}),
            (Dirs{"/etc/systemd/system/getty@tty1.service.d",
                  "/etc/systemd/system/getty@.service.d", "/etc/systemd/system/service.d"}));
  EXPECT_EQ(dropInDirsFor("foo-bar@x.service", {"/e"}),
            (Dirs{"/e/foo-bar@x.service.d", "/e/foo-bar@.service.d", "/e/foo-@.service.d",
                  "/e/foo-@x.service.d", "/e/service.d"}));
  EXPECT_EQ(dropInDirsFor("-.slice", {"/e"}), (Dirs{"/e/-.slice.d", "/e/slice.d"}));
  EXPECT_EQ(dropInDirsFor("a--b.service", {"/e"}),
            (Dirs{"/e/a--b.service.d", "/e/a--.service.d", "/e/a-.service.d", "/e/service.d"}));
  EXPECT_TRUE(dropInDirsFor("not a unit", {"/e"}).empty());
  EXPECT_TRUE(dropInDirsFor("foo.bogus", {"/e"}).empty());
}

TEST(DropInDirs, DefaultSearchPathEtcBeforeRunBeforeVendor) {
  const auto& p = systemUnitSearchPath();
  auto pos = [&](const std::string& d) { return std::find(p.begin(), p.end(), d) - p.begin(); };
  EXPECT_LT(pos("/etc/systemd/system"), pos("/run/systemd/system"));
  EXPECT_LT(pos("/run/systemd/system"), pos("/usr/local/lib/systemd/system"));
  EXPECT_LT(pos("/usr/local/lib/systemd/system"), pos("/usr/lib/systemd/system"));
  EXPECT_LT(pos("/usr/lib/systemd/system"), pos("/lib/systemd/system"));
  EXPECT_LT(pos("/etc/systemd/system.control"), pos("/etc/systemd/system"));
}

TEST(OrderDropIns, SortedByFileNameAcrossDirectories) {
  auto dirs = dropInDirsFor("a.slice", kPath);
  auto out = orderDropInFiles(dirs, {{"/usr/lib/systemd/system/a.slice.d", "10-vendor.conf"},
                                     {"/etc/systemd/system/a.slice.d", "70-admin.conf"},
                                     {"/run/systemd/system/a.slice.d", "50-runtime.conf"},
                                     {"/etc/systemd/system/slice.d", "05-all.conf"}});
  EXPECT_EQ(out, (Dirs{"/etc/systemd/system/slice.d/05-all.conf",
                       "/usr/lib/systemd/system/a.slice.d/10-vendor.conf",
                       "/run/systemd/system/a.slice.d/50-runtime.conf",
                       "/etc/systemd/system/a.slice.d/70-admin.conf"}));
}

TEST(OrderDropIns, SameNameInHigherDirectoryMasksLower) {
  auto dirs = dropInDirsFor("a.slice", kPath);
  auto out = orderDropInFiles(dirs, {{"/usr/lib/systemd/system/a.slice.d", "50-x.conf"},
                                     {"/run/systemd/system/a.slice.d", "50-x.conf"},
                                     {"/etc/systemd/system/a.slice.d", "50-x.conf"},
                                     {"/usr/lib/systemd/system/a.slice.d", "60-y.conf"}});
  EXPECT_EQ(out, (Dirs{"/etc/systemd/system/a.slice.d/50-x.conf",
                       "/usr/lib/systemd/system/a.slice.d/60-y.conf"}));
}

TEST(OrderDropIns, SpecificDirMasksPrefixDirInSameSearchDirButEtcPrefixBeatsVendorSpecific) {
  auto dirs = dropInDirsFor("user-1000.slice", kPath);
  auto out = orderDropInFiles(dirs, {{"/etc/systemd/system/user-.slice.d", "50-x.conf"},
                                     {"/etc/systemd/system/user-1000.slice.d", "50-x.conf"},
                                     {"/usr/lib/systemd/system/user-1000.slice.d", "60-y.conf"},
                                     {"/etc/systemd/system/user-.slice.d", "60-y.conf"},
                                     {"/usr/lib/systemd/system/slice.d", "60-y.conf"}});
  EXPECT_EQ(out, (Dirs{"/etc/systemd/system/user-1000.slice.d/50-x.conf",
                       "/etc/systemd/system/user-.slice.d/60-y.conf"}));
}

TEST(OrderDropIns, TypeWideDirIsLowestForSameName) {
  auto dirs = dropInDirsFor("a.slice", kPath);
  auto out = orderDropInFiles(dirs, {{"/etc/systemd/system/slice.d", "50-x.conf"},
                                     {"/usr/lib/systemd/system/a.slice.d", "50-x.conf"}});
  EXPECT_EQ(out, (Dirs{"/usr/lib/systemd/system/a.slice.d/50-x.conf"}));
}

TEST(OrderDropIns, OnlyConfFilesAndKnownDirs) {
  auto dirs = dropInDirsFor("a.slice", kPath);
  auto out = orderDropInFiles(dirs, {{"/etc/systemd/system/a.slice.d", "50-x.conf.bak"},
                                     {"/etc/systemd/system/a.slice.d", ".conf"},
                                     {"/etc/systemd/system/a.slice.d", "README"},
                                     {"/etc/systemd/system/b.slice.d", "50-x.conf"},
                                     {"/etc/systemd/system/a.slice.d", "Z.conf"},
                                     {"/etc/systemd/system/a.slice.d", "a.conf"}});
  EXPECT_EQ(out, (Dirs{"/etc/systemd/system/a.slice.d/Z.conf",  // strcmp order: 'Z' < 'a'
                       "/etc/systemd/system/a.slice.d/a.conf"}));
}

TEST(UnitNames, SliceToCgroupPath) {
  EXPECT_EQ(sliceUnitToCgroupPath("-.slice")->display(), "/");
  EXPECT_EQ(sliceUnitToCgroupPath("system.slice")->display(), "/system.slice");
  EXPECT_EQ(sliceUnitToCgroupPath("a-b.slice")->display(), "/a.slice/a-b.slice");
  EXPECT_EQ(sliceUnitToCgroupPath("a-b-c.slice")->display(), "/a.slice/a-b.slice/a-b-c.slice");
  EXPECT_EQ(sliceUnitToCgroupPath("user-1000.slice")->display(), "/user.slice/user-1000.slice");
  EXPECT_EQ(sliceUnitToCgroupPath("foo\\x2dbar.slice")->display(), "/foo\\x2dbar.slice");
  // systemd's cg_escape: a name that looks like a controller file gets a '_' (the same
  // mapping cxiosyncctl uses; they once disagreed: /io.slice here, /_io.slice there).
  EXPECT_EQ(sliceUnitToCgroupPath("io.slice")->display(), "/_io.slice");
  EXPECT_EQ(sliceUnitToCgroupPath("io-x.slice")->display(), "/_io.slice/io-x.slice");
  EXPECT_EQ(sliceUnitToCgroupPath("memory.slice")->display(), "/_memory.slice");
  for (auto bad : {"-a.slice", "a-.slice", "a--b.slice", "a.service", "a@b.slice", ".slice",
                   "a b.slice", "", "slice"}) {
    EXPECT_FALSE(sliceUnitToCgroupPath(bad)) << bad;
  }
  EXPECT_EQ(sliceUnitToCgroupPath("a.service").error().message,
            "'a.service' is not a valid slice unit name");
}

TEST(UnitNames, CgroupPathToSlice) {
  auto unit = [](std::string_view p) {
    auto r = cgroupPathToSliceUnit(*CgroupPath::parse(p));
    return r ? *r : "ERR";
  };
  EXPECT_EQ(unit("/"), "-.slice");
  EXPECT_EQ(unit("/system.slice"), "system.slice");
  EXPECT_EQ(unit("/a.slice/a-b.slice/a-b-c.slice"), "a-b-c.slice");
  EXPECT_EQ(unit("/a-b.slice"), "ERR");            // must sit under a.slice
  EXPECT_EQ(unit("/a.slice/b.slice"), "ERR");      // not a-b.slice
  EXPECT_EQ(unit("/a.slice/a-b-c.slice"), "ERR");  // skips a level
  EXPECT_EQ(unit("/system.slice/foo.service"), "ERR");
  EXPECT_EQ(unit("/_io.slice/io-x.slice"), "io-x.slice");
  EXPECT_EQ(unit("/io.slice"), "ERR");  // systemd never names it so
  for (auto s : {"a.slice", "a-b.slice", "user-1000.slice", "x-y-z-w.slice", "io-x.slice"}) {
    EXPECT_EQ(*cgroupPathToSliceUnit(*sliceUnitToCgroupPath(s)), s);
  }
}

TEST(UnitNames, UnitForCgroupPath) {
  auto unit = [](std::string_view p) { return unitForCgroupPath(*CgroupPath::parse(p)); };
  EXPECT_EQ(unit("/"), "-.slice");
  EXPECT_EQ(unit("/init.scope"), "init.scope");
  EXPECT_EQ(unit("/system.slice"), "system.slice");
  EXPECT_EQ(unit("/system.slice/cron.service"), "cron.service");
  EXPECT_EQ(unit("/system.slice/_io.service"), "io.service");
  EXPECT_EQ(unit("/user.slice/user-1000.slice/user@1000.service"), "user@1000.service");
  EXPECT_EQ(unit("/user.slice/user-1000.slice/session-2.scope"), "session-2.scope");
  EXPECT_EQ(unit("/system.slice/docker.service/payload"), "");
  EXPECT_EQ(unit("/system.slice/docker.service/x.scope"), "");
  EXPECT_EQ(unit("/machine.slice/foo@.service"), "");
  EXPECT_TRUE(isValidUnitName("foo@.service"));
  EXPECT_FALSE(isValidUnitName("foo@bar.slice"));
}

}  // namespace
}  // namespace cxiosync
