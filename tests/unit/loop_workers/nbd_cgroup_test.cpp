// SPDX-License-Identifier: GPL-2.0-or-later
// Whose cgroup pays for nbd backing I/O (issue 17 item 5): the server_cgroup option, the
// default per caller uid, and the checks on the caller's /proc/PID/cgroup (hostile bytes).
#include "daemon/blockdev/nbd/nbd_cgroup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "daemon/blockdev/nbd/nbd_manager.h"

using namespace cxiosync;
using nbd::ServerCgroup;

namespace {

class Tree {
 public:
  Tree() {
    char t[] = "/tmp/nbdcg-test.XXXXXX";
    dir_ = ::mkdtemp(t);
  }
  ~Tree() { (void)std::system(("rm -rf '" + dir_ + "'").c_str()); }
  const std::string& dir() const { return dir_; }
  void file(const std::string& rel, const std::string& text) {
    (void)std::system(("mkdir -p \"$(dirname '" + dir_ + "/" + rel + "')\"").c_str());
    std::ofstream(dir_ + "/" + rel) << text;
  }
  void mkdirs(const std::string& rel) {
    (void)std::system(("mkdir -p '" + dir_ + "/" + rel + "'").c_str());
  }

 private:
  std::string dir_;
};

std::string status(uint32_t real, uint32_t eff) {
  return "Name:\tcxiosyncctl\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t77\nPid:\t77\n"
         "Uid:\t" +
         std::to_string(real) + "\t" + std::to_string(eff) + "\t" + std::to_string(eff) + "\t" +
         std::to_string(eff) + "\nGid:\t0\t0\t0\t0\n";
}

}  // namespace

TEST(NbdCgroup, OptionAndDefault) {
  EXPECT_EQ(*nbd::parseServerCgroup(""), ServerCgroup::Default);
  EXPECT_EQ(*nbd::parseServerCgroup("caller"), ServerCgroup::Caller);
  EXPECT_EQ(*nbd::parseServerCgroup("daemon"), ServerCgroup::Daemon);
  for (const char* bad : {"Caller", "tenant", "caller ", "/user.slice", "default"}) {
    auto r = nbd::parseServerCgroup(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, EINVAL);
    EXPECT_NE(r.error().message.find("caller, daemon"), std::string::npos) << r.error().message;
  }
  // Default: the caller's cgroup for everyone but root.
  EXPECT_EQ(nbd::effectiveServerCgroup(ServerCgroup::Default, 1000), ServerCgroup::Caller);
  EXPECT_EQ(nbd::effectiveServerCgroup(ServerCgroup::Default, 65534), ServerCgroup::Caller);
  EXPECT_EQ(nbd::effectiveServerCgroup(ServerCgroup::Default, 0), ServerCgroup::Daemon);
  // Explicit choices stay, for root and others.
  EXPECT_EQ(nbd::effectiveServerCgroup(ServerCgroup::Caller, 0), ServerCgroup::Caller);
  EXPECT_EQ(nbd::effectiveServerCgroup(ServerCgroup::Daemon, 1000), ServerCgroup::Daemon);
  EXPECT_STREQ(nbd::serverCgroupName(ServerCgroup::Caller), "caller");
  EXPECT_STREQ(nbd::serverCgroupName(ServerCgroup::Daemon), "daemon");
}

TEST(NbdCgroup, RelativePathRefusesEscapes) {
  EXPECT_EQ(*nbd::cgroupRelativePath("/"), ".");
  EXPECT_EQ(*nbd::cgroupRelativePath("/user.slice/user-1000.slice/session-3.scope"),
            "user.slice/user-1000.slice/session-3.scope");
  EXPECT_EQ(*nbd::cgroupRelativePath("/a:b/c d"), "a:b/c d");
  for (const std::string& bad : std::vector<std::string>{
           "", "user.slice", "/..", "/../x", "/a/../../b", "/a/./b", "/a//b", "/a/", "/.",
           std::string("/a\0b", 4), "/" + std::string(5000, 'x')}) {
    auto r = nbd::cgroupRelativePath(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_EQ(r.error().code, EINVAL);
    }
  }
}

TEST(NbdCgroup, StatusEuid) {
  EXPECT_EQ(*parseStatusEuid(status(1000, 1000)), 1000u);
  EXPECT_EQ(*parseStatusEuid(status(0, 1000)), 1000u) << "effective, not real";
  EXPECT_EQ(*parseStatusEuid("Uid:\t5\t6\t6\t6\n"), 6u);
  for (const char* bad : {"", "Name:\tx\n", "Uid:\t\n", "Uid:\t5\n", "Uid:\tx\ty\n",
                          "Name:\tUid:\t1\t2\n" /* not at a line start */}) {
    EXPECT_FALSE(parseStatusEuid(bad)) << bad;
  }
}

TEST(NbdCgroup, ProcessCgroupChecks) {
  Tree t;
  const std::string proc = t.dir() + "/proc", cg = t.dir() + "/cg";
  t.mkdirs("cg/tenant");
  auto open = [&](pid_t pid, uint32_t uid) { return nbd::openProcessCgroup(pid, uid, proc, cg); };

  // No such process / no pid from the bus.
  EXPECT_EQ(open(0, 1000).error().code, ESRCH);
  EXPECT_EQ(open(42, 1000).error().code, ESRCH);
  // Another uid's process (a recycled pid) is refused.
  t.file("proc/42/status", status(1001, 1001));
  t.file("proc/42/stat", "42 (x) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n");
  t.file("proc/42/cgroup", "0::/tenant\n");
  auto other = open(42, 1000);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, EPERM);
  // Same uid: the path is fine, but this tree is no cgroup2 (tmpfs or the like).
  t.file("proc/42/status", status(1000, 1000));
  auto notCg2 = open(42, 1000);
  ASSERT_FALSE(notCg2);
  EXPECT_EQ(notCg2.error().code, ENOTSUP) << notCg2.error().message;
  EXPECT_NE(notCg2.error().message.find("not on cgroup2"), std::string::npos);
  // A removed cgroup, one outside our namespace, a pure v1 process, a garbled file.
  t.file("proc/42/cgroup", "0::/tenant (deleted)\n");
  EXPECT_EQ(open(42, 1000).error().code, ENOENT);
  t.file("proc/42/cgroup", "0::/../../etc\n");
  EXPECT_EQ(open(42, 1000).error().code, EINVAL);
  t.file("proc/42/cgroup", "4:memory:/x\n");
  EXPECT_EQ(open(42, 1000).error().code, ENOTSUP);
  t.file("proc/42/cgroup", "0::relative\n");
  EXPECT_EQ(open(42, 1000).error().code, EINVAL);
  // A symlink inside the cgroup root is never followed out of it.
  ASSERT_EQ(::symlink("/etc", (cg + "/link").c_str()), 0);
  t.file("proc/42/cgroup", "0::/link\n");
  auto link = open(42, 1000);
  ASSERT_FALSE(link);
  EXPECT_NE(link.error().code, ENOTSUP) << "refused before the filesystem check";
  t.file("proc/42/cgroup", "0::/missing\n");
  EXPECT_EQ(open(42, 1000).error().code, ENOENT);
}

// Issue 26 item 3: a frozen target is refused before any server is spawned into it.
TEST(NbdCgroup, FrozenTargetRefused) {
  Tree tr;
  tr.mkdirs("cg");
  auto open = [&] {
    return nbd::TargetCgroup{
        "/cg", UniqueFd(::open((tr.dir() + "/cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC))};
  };
  EXPECT_TRUE(nbd::refuseFrozen(open()));  // no freezer files (before 5.2)
  tr.file("cg/cgroup.freeze", "0\n");
  tr.file("cg/cgroup.events", "populated 1\nfrozen 0\n");
  EXPECT_TRUE(nbd::refuseFrozen(open()));
  tr.file("cg/cgroup.events", "populated 1\nfrozen 1\n");  // an ancestor froze it
  auto r = nbd::refuseFrozen(open());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EBUSY);
  EXPECT_NE(r.error().message.find("frozen"), std::string::npos) << r.error().message;
  tr.file("cg/cgroup.events", "populated 1\nfrozen 0\n");
  tr.file("cg/cgroup.freeze", "1\n");  // asked, not yet frozen: the server would stop too
  r = nbd::refuseFrozen(open());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EBUSY);
}

TEST(NbdCgroup, OwnCgroupOnTheHost) {
  struct statfs fs {};
  if (::statfs("/sys/fs/cgroup", &fs) != 0 || fs.f_type != 0x63677270)
    GTEST_SKIP() << "/sys/fs/cgroup is not cgroup2";
  const std::string mine = nbd::processCgroupPath(::getpid());
  ASSERT_FALSE(mine.empty());
  auto t = nbd::openProcessCgroup(::getpid(), ::geteuid());
  if (!t && t.error().code == EINVAL) GTEST_SKIP() << "outside our cgroup namespace: " << mine;
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->path, mine);
  EXPECT_GE(t->dir.get(), 0);
  EXPECT_FALSE(nbd::openProcessCgroup(::getpid(), ::geteuid() + 1));
}

TEST(NbdCgroup, RecordKeepsServerCgroupAndOldRecordsRead) {
  NbdRecord r;
  r.index = 1;
  r.pid = 4242;
  r.serverCgroup = "/tenant/\xff.scope";
  r.serverCgroupMode = "caller";
  auto back = nbdRecordsFromJson(nbdRecordsToJson({r}));
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].serverCgroup, r.serverCgroup);
  EXPECT_EQ((*back)[0].serverCgroupMode, "caller");
  // A record from before this field: read, with both empty.
  auto old = nbdRecordsFromJson(
      "{\"version\": 1, \"nbd\": [{\"index\": 3, \"uid\": 1000, \"server_pid\": 77}]}");
  ASSERT_TRUE(old) << old.error().message;
  ASSERT_EQ(old->size(), 1u);
  EXPECT_EQ((*old)[0].serverCgroup, "");
  EXPECT_EQ((*old)[0].serverCgroupMode, "");
  // A wrong type makes the record unreadable (foreign), never a crash.
  std::vector<std::string> skipped;
  auto bad = nbdRecordsFromJson(
      "{\"nbd\": [{\"index\": 3, \"uid\": 1, \"server_pid\": 7, \"server_cgroup\": 5}]}", &skipped);
  ASSERT_TRUE(bad);
  EXPECT_TRUE(bad->empty());
  EXPECT_EQ(skipped.size(), 1u);
}
