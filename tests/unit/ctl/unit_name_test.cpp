// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/unit_name.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <vector>

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

// A name that is not UTF-8 is given as the daemon writes it ("\xff", policy/bytes_text.h),
// checked on its bytes, and passed on in that text form (the daemon decodes it).
TEST(UnitName, EscapedBytesPassThroughAsText) {
  EXPECT_EQ(resolve("/\\xff"), "/\\xff");
  EXPECT_EQ(resolve("a//\\xFF/"), "/a/\\xff");
  EXPECT_EQ(resolve("/\xff"), "/\\xff") << "raw bytes from a shell's $'\\xff' too";
  std::string name = "/";
  for (int i = 0; i < 255; ++i) name += "\\xff";
  EXPECT_EQ(resolve(name.c_str()), name) << "255 bytes, though 1020 characters of text";
  EXPECT_EQ(resolve((name + "\\xff").c_str()).rfind("ERR: ", 0), 0u);
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

TEST(UnitName, EscapesLikeSystemd) {
  EXPECT_EQ(cgroupEscape("foo.service"), "foo.service");
  EXPECT_EQ(cgroupEscape("io.service"), "_io.service");
  EXPECT_EQ(cgroupEscape("memory.slice"), "_memory.slice");
  EXPECT_EQ(cgroupEscape("bpf-firewall.scope"), "_bpf-firewall.scope");
  EXPECT_EQ(cgroupEscape("_x.service"), "__x.service");
  EXPECT_EQ(cgroupEscape("cgroup.procs"), "_cgroup.procs");
  EXPECT_EQ(cgroupEscape("tasks"), "_tasks");
  EXPECT_EQ(cgroupEscape("iox.service"), "iox.service");
  EXPECT_EQ(cgroupEscape("a.io.service"), "a.io.service");
  EXPECT_EQ(resolve("io.service"), "/system.slice/_io.service");
  EXPECT_EQ(resolve("io-a.slice"), "/_io.slice/io-a.slice");
}

// Answers per unit name; records what was asked.
class FakeSystemd : public UnitLookup {
 public:
  std::map<std::string, UnitAnswer> answers;
  std::vector<std::string> asked;
  UnitAnswer lookup(const std::string& unit) override {
    asked.push_back(unit);
    auto it = answers.find(unit);
    if (it != answers.end()) return it->second;
    UnitAnswer a;
    a.kind = UnitAnswer::Kind::Reached;
    a.loadState = "not-found";
    a.activeState = "inactive";
    return a;
  }
};

UnitAnswer active(std::string cgroup, std::string slice) {
  UnitAnswer a;
  a.kind = UnitAnswer::Kind::Reached;
  a.loadState = "loaded";
  a.activeState = "active";
  a.controlGroup = std::move(cgroup);
  a.slice = std::move(slice);
  return a;
}

UnitAnswer failed(UnitAnswer::Kind kind, std::string reason) {
  UnitAnswer a;
  a.kind = kind;
  a.reason = std::move(reason);
  return a;
}

TEST(UnitName, ServicesAndScopesAskSystemd) {
  FakeSystemd sd;
  sd.answers["cxvm-dirtier.service"] =
      active("/throttled.slice/cxvm-dirtier.service", "throttled.slice");
  sd.answers["session-3.scope"] =
      active("/user.slice/user-1000.slice/session-3.scope", "user-1000.slice");
  sd.answers["user@1000.service"] =
      active("/user.slice/user-1000.slice/user@1000.service", "user-1000.slice");
  auto r = resolveCgroupArg("cxvm-dirtier.service", &sd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->path, "/throttled.slice/cxvm-dirtier.service");
  EXPECT_TRUE(r->fromUnit);
  EXPECT_TRUE(r->fromSystemd);
  EXPECT_FALSE(r->assumed);
  EXPECT_EQ(r->note, "");
  EXPECT_EQ(resolveCgroupArg("session-3.scope", &sd)->path,
            "/user.slice/user-1000.slice/session-3.scope");
  EXPECT_EQ(resolveCgroupArg("user@1000.service", &sd)->path,
            "/user.slice/user-1000.slice/user@1000.service");
  EXPECT_EQ(sd.asked, (std::vector<std::string>{"cxvm-dirtier.service", "session-3.scope",
                                                "user@1000.service"}));
}

TEST(UnitName, SlicesPathsAndInitScopeDoNotAskSystemd) {
  FakeSystemd sd;
  EXPECT_EQ(resolveCgroupArg("a-b.slice", &sd)->path, "/a.slice/a-b.slice");
  EXPECT_EQ(resolveCgroupArg("-.slice", &sd)->path, "/");
  EXPECT_EQ(resolveCgroupArg("init.scope", &sd)->path, "/init.scope");
  EXPECT_EQ(resolveCgroupArg("/system.slice/x.service", &sd)->path, "/system.slice/x.service");
  EXPECT_EQ(resolveCgroupArg("a b.service", &sd).error().code, EINVAL);
  EXPECT_TRUE(sd.asked.empty());
}

TEST(UnitName, InactiveUnitIsAnErrorThatSaysWhereItWillBe) {
  FakeSystemd sd;
  UnitAnswer inactive;
  inactive.kind = UnitAnswer::Kind::Reached;
  inactive.loadState = "loaded";
  inactive.activeState = "inactive";
  inactive.slice = "backup-nightly.slice";
  sd.answers["backup.service"] = inactive;
  auto r = resolveCgroupArg("backup.service", &sd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOENT);
  EXPECT_EQ(r.error().message,
            "backup.service is not active (inactive): a unit has a cgroup only while it runs; "
            "when started it will be /backup.slice/backup-nightly.slice/backup.service "
            "(backup-nightly.slice), pass that path to set policy before it starts");

  inactive.activeState = "failed";
  inactive.loadState = "masked";
  inactive.slice = "-.slice";
  sd.answers["io.service"] = inactive;
  r = resolveCgroupArg("io.service", &sd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "io.service is not active (failed, masked): a unit has a cgroup only while it runs; "
            "when started it will be /_io.service (-.slice), pass that path to set policy "
            "before it starts");

  inactive.slice = "";
  sd.answers["x.scope"] = inactive;
  r = resolveCgroupArg("x.scope", &sd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "x.scope is not active (failed, masked): a unit has a cgroup only while it runs");
}

TEST(UnitName, UnknownUnitIsAnError) {
  FakeSystemd sd;
  auto r = resolveCgroupArg("nosuch.service", &sd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOENT);
  EXPECT_EQ(r.error().message, "Unit nosuch.service not found (systemd has no such unit)");
}

TEST(UnitName, UnreachableSystemdFallsBackToTheDefaultSliceWithANote) {
  FakeSystemd sd;
  sd.answers["backup.service"] = failed(UnitAnswer::Kind::Unreachable, "not booted with systemd");
  auto r = resolveCgroupArg("backup.service", &sd);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->path, "/system.slice/backup.service");
  EXPECT_TRUE(r->assumed);
  EXPECT_FALSE(r->fromSystemd);
  EXPECT_EQ(r->note,
            "Note: systemd is not reachable (not booted with systemd); assuming backup.service "
            "is in the default slice: /system.slice/backup.service (pass a cgroup path if it "
            "is elsewhere)");
  // Without a lookup at all: the same path, the plain note.
  EXPECT_EQ(resolveCgroupArg("backup.service")->note,
            "Note: assuming backup.service is in the default slice: /system.slice/backup.service "
            "(pass a cgroup path if it is elsewhere)");
}

TEST(UnitName, SystemdErrorsAreNotGuessedAround) {
  FakeSystemd sd;
  sd.answers["a.service"] =
      failed(UnitAnswer::Kind::Refused, "Access denied (org.freedesktop.DBus.Error.AccessDenied)");
  auto r = resolveCgroupArg("a.service", &sd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EIO);
  EXPECT_EQ(r.error().message,
            "Cannot resolve a.service through systemd: Access denied "
            "(org.freedesktop.DBus.Error.AccessDenied)");

  // A ControlGroup the daemon would refuse is not passed on.
  sd.answers["b.service"] = active("/a/../b", "system.slice");
  r = resolveCgroupArg("b.service", &sd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EPROTO);
  EXPECT_NE(r.error().message.find("systemd gave b.service the cgroup '/a/../b'"),
            std::string::npos);
  // The root cgroup ("/" for -.slice) is a valid answer.
  sd.answers["c.scope"] = active("/", "");
  EXPECT_EQ(resolveCgroupArg("c.scope", &sd)->path, "/");
}

// --user: the user manager's units, under user@UID.service (systemd.special(7)).
TEST(UnitName, UserUnitsLiveUnderTheUserManager) {
  const std::string u = "/user.slice/user-1000.slice/user@1000.service";
  auto user = [](const char* arg, UnitLookup* sd = nullptr) {
    auto r = resolveUserCgroupArg(arg, 1000, sd);
    return r ? r->path : "ERR: " + r.error().message;
  };
  EXPECT_EQ(userManagerCgroup(1000), u);
  EXPECT_EQ(user("-.slice"), u);
  EXPECT_EQ(user("app.slice"), u + "/app.slice");
  EXPECT_EQ(user("app-flatpak.slice"), u + "/app.slice/app-flatpak.slice");
  EXPECT_EQ(user("init.scope"), u + "/init.scope");
  EXPECT_EQ(user("backup.service"), u + "/app.slice/backup.service");
  EXPECT_EQ(user("io.service"), u + "/app.slice/_io.service");
  auto assumed = resolveUserCgroupArg("backup.service", 1000, nullptr);
  ASSERT_TRUE(assumed);
  EXPECT_TRUE(assumed->assumed && assumed->fromUnit);
  EXPECT_NE(assumed->note.find("user manager's default slice"), std::string::npos);
  EXPECT_EQ(user("/system.slice/x.service"), "/system.slice/x.service") << "paths stay paths";
  EXPECT_EQ(user("a b.service").rfind("ERR: ", 0), 0u);
  EXPECT_EQ(user("a--b.slice").rfind("ERR: ", 0), 0u);
  EXPECT_EQ(user("").rfind("ERR: ", 0), 0u);
}

TEST(UnitName, UserUnitsAskTheUserManager) {
  const std::string u = "/user.slice/user-1000.slice/user@1000.service";
  FakeSystemd sd;
  sd.answers["podman-1.scope"] = active(u + "/user.slice/podman-1.scope", "user.slice");
  UnitAnswer inactive;
  inactive.kind = UnitAnswer::Kind::Reached;
  inactive.loadState = "loaded";
  inactive.activeState = "inactive";
  inactive.slice = "app-batch.slice";
  sd.answers["batch.service"] = inactive;
  auto r = resolveUserCgroupArg("podman-1.scope", 1000, &sd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->path, u + "/user.slice/podman-1.scope");
  EXPECT_TRUE(r->fromSystemd);
  auto stopped = resolveUserCgroupArg("batch.service", 1000, &sd);
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().code, ENOENT);
  EXPECT_NE(stopped.error().message.find(u + "/app.slice/app-batch.slice/batch.service"),
            std::string::npos)
      << stopped.error().message;
  EXPECT_EQ(sd.asked, (std::vector<std::string>{"podman-1.scope", "batch.service"}));
  FakeSystemd gone;
  gone.answers["x.service"] = failed(UnitAnswer::Kind::Unreachable, "no user bus");
  auto fallback = resolveUserCgroupArg("x.service", 1000, &gone);
  ASSERT_TRUE(fallback);
  EXPECT_EQ(fallback->path, u + "/app.slice/x.service");
  EXPECT_NE(fallback->note.find("not reachable (no user bus)"), std::string::npos);
}

}  // namespace
}  // namespace cxiosync::ctl
