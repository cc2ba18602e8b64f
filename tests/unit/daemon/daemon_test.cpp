// SPDX-License-Identifier: GPL-2.0-or-later
// The daemon core on a fake cgroup tree: a journal left by a killed daemon is restored
// before READY=1 reaches the (fake) service manager.
#include "daemon/core/daemon.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>

#include "policy/config/defaults.h"
#include "test_util.h"

namespace cxiosync {
namespace {

using namespace cxiosync::testing;
using namespace std::chrono_literals;

class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    setenv("NOTIFY_SOCKET", path.c_str(), 1);
  }
  ~NotifySocket() {
    unsetenv("NOTIFY_SOCKET");
    close(fd_);
    unlink(path_.c_str());
  }
  std::vector<std::string> receive() {
    std::vector<std::string> out;
    char buf[4096];
    for (;;) {
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.emplace_back(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(DaemonTest, JournaledBoostIsRestoredBeforeReady) {
  TempDir cgroups, run;
  std::filesystem::create_directories(cgroups.file("cg1"));
  // A killed daemon left cg1 boosted (same-length values: see boost_executor_test).
  writeFile(cgroups.file("cg1/io.max"), "254:0 wbps=max\n");
  JournalRecord rec;
  rec.boost.cgroup = cg("/cg1");
  rec.boost.device = dev(254, 0);
  rec.boost.original = IoMaxEntry{dev(254, 0), {kUnlimited, 100, kUnlimited, kUnlimited}};
  rec.boost.boosted = IoMaxEntry{dev(254, 0), {kUnlimited, kUnlimited, kUnlimited, kUnlimited}};
  ASSERT_TRUE(Journal(run.path()).save({rec}));

  NotifySocket notify(run.file("notify.sock"));
  DaemonSettings o;
  o.cgroupRoot = cgroups.path();
  o.runDir = run.path();
  o.tracefsRoot = "/nonexistent";
  o.detector = DetectorKind::Procfs;
  o.configPath = "/nonexistent";
  o.assumeShutdown = ShutdownOverride::No;
  Config config{builtinGlobalSettings(), {}, {}, {}};
  auto d = Daemon::create(o, config);
  ASSERT_TRUE(d) << d.error().message;

  std::vector<std::string> messages;
  std::string ioMaxAtReady;
  ASSERT_TRUE(d.value()->loop().addTimer(50ms, 0ns, [&] {
    // The loop runs only after READY=1 was sent: what io.max holds now held at READY.
    messages = notify.receive();
    ioMaxAtReady = readFile(cgroups.file("cg1/io.max"));
    d.value()->loop().exit(0);
  }));
  EXPECT_EQ(d.value()->run(), 0);
  ASSERT_FALSE(messages.empty());
  EXPECT_NE(messages.back().find("READY=1"), std::string::npos) << messages.back();
  EXPECT_NE(messages.back().find("STATUS=procfs detector"), std::string::npos);
  EXPECT_EQ(ioMaxAtReady, "254:0 wbps=100\n");
  EXPECT_TRUE(Journal(run.path()).load()->records.empty());
  EXPECT_TRUE(std::filesystem::exists(run.file("metrics.prom")));
}

TEST(DaemonTest, UnwritableJournalDirRefusesToStart) {
  TempDir cgroups;
  DaemonSettings o;
  o.cgroupRoot = cgroups.path();
  o.runDir = "/nonexistent/deeper/run";
  o.detector = DetectorKind::Procfs;
  Config config{builtinGlobalSettings(), {}, {}, {}};
  EXPECT_FALSE(Daemon::create(o, config));
}

}  // namespace
}  // namespace cxiosync
