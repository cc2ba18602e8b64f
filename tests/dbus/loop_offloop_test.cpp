// SPDX-License-Identifier: GPL-2.0-or-later
// Issue 17 item 3: no loop operation blocks the daemon's event loop. The real cxiosyncd on a
// private bus, over a fake cgroup tree and a fake /proc (procfs detector) but the host's real
// loop devices: a LoopSetup whose backing file is on a FUSE file system that never answers
// the daemon (tests/dbus/hung_fuse.h) and 40 Detach calls queued behind it. Meanwhile
// GetStatus answers within 100 ms, and a foreign sync still gets its boost, which is restored
// when the syncer leaves. Before 2026-12 the fstat of the caller's fd ran on the loop thread:
// the daemon stopped answering and boosting until the file system did.
#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sdbus-c++/sdbus-c++.h>

#include "dbus/client.h"
#include "dbus/sdbus_compat.h"
#include "tests/dbus/bus_fixture.h"
#include "tests/dbus/fake_proc.h"
#include "tests/dbus/hung_fuse.h"

namespace {

using namespace std::chrono_literals;
using namespace cxiosync;
namespace fs = std::filesystem;
using namespace cxiosync::fakeproc;
namespace compat = cxiosync::dbus::compat;
using Clock = std::chrono::steady_clock;

const std::string kCtl = CXIOSYNC_CTL_PATH;
const std::string kDir = CXIOSYNC_DBUS_TEST_DIR;
// CXIOSYNC_TEST_DAEMON runs another build's daemon (to show this test fails without the fix).
std::string daemonPath() {
  const char* e = std::getenv("CXIOSYNC_TEST_DAEMON");
  return e && *e ? e : CXIOSYNC_DAEMON_PATH;
}

constexpr int kDetaches = 40;
const std::string kLimited = "8:0 wbps=1000\n";  // 14 bytes, see daemon_bus_test.cpp

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string whyNot() {
  if (std::getenv("CXIOSYNC_SKIP_HOST_LOOP")) return "CXIOSYNC_SKIP_HOST_LOOP is set";
  if (geteuid() != 0) return "needs root (loop devices, a FUSE mount)";
  int fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (fd < 0) return "/dev/loop-control unusable";
  close(fd);
  if (access("/dev/fuse", R_OK | W_OK) != 0) return "no /dev/fuse";
  return {};
}

// How long until pred() holds (polled every 5 ms); nullopt after `limit`.
template <class P>
std::optional<std::chrono::milliseconds> timeUntil(P pred, std::chrono::milliseconds limit) {
  const auto t0 = Clock::now();
  while (Clock::now() - t0 < limit) {
    if (pred()) return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    std::this_thread::sleep_for(5ms);
  }
  return std::nullopt;
}

class LoopOffLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = whyNot(); !why.empty()) GTEST_SKIP() << why;
    tmp_ = fs::path(::testing::TempDir()) / ("cxiosync-offloop-" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    for (const char* d :
         {"cg/slow", "cg/system.slice", "proc", "trace", "run", "state", "config", "units", "mnt"})
      fs::create_directories(tmp_ / d);
    std::ofstream(tmp_ / "cg/cgroup.controllers") << "cpu io memory pids\n";
    std::ofstream(tmp_ / "cg/slow/io.max") << kLimited;
    std::ofstream(tmp_ / "cg/slow/memory.stat") << "file_dirty 536870912\nfile_writeback 0\n";
    std::ofstream(tmp_ / "data.img") << std::string(1 << 20, '\0');
    ASSERT_TRUE(env_.startBus(kDir + "/test-bus.conf")) << "no private bus";
    const std::string t = tmp_.string();
    ASSERT_TRUE(env_.startServer(
        {daemonPath(), "--foreground", "--log-level=info", "--bus=" + env_.address(),
         "--cgroup-root=" + t + "/cg", "--proc-root=" + t + "/proc", "--sys-root=/sys",
         "--tracefs-root=" + t + "/trace", "--run-dir=" + t + "/run", "--state-dir=" + t + "/state",
         "--config=" + t + "/config", "--unit-root=" + t + "/units", "--detector=procfs"},
        10s))
        << "cxiosyncd did not take org.cxiosync1";
  }
  void TearDown() override {
    fuse_.stop();  // unblocks the daemon, whatever happened
    for (pid_t p : children_) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    if (!device_.empty() && fs::exists("/sys/block/" + device_ + "/loop/backing_file")) {
      int fd = open(("/dev/" + device_).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        ioctl(fd, LOOP_CLR_FD, 0);
        close(fd);
      }
    }
    for (int fd : pipes_) close(fd);
    env_.stop();
    if (!tmp_.empty() && !HasFailure()) fs::remove_all(tmp_);
  }

  // GetStatus's round trip (a 2 s timeout: a blocked daemon shows as 2 s).
  std::chrono::microseconds statusLatency(sdbus::IProxy& proxy) {
    const auto t0 = Clock::now();
    try {
      std::map<std::string, sdbus::Variant> out;
      proxy.callMethod("GetStatus")
          .onInterface("org.cxiosync1.Manager")
          .withArguments(std::map<std::string, sdbus::Variant>{})
          .withTimeout(2s)
          .storeResultsTo(out);
    } catch (const sdbus::Error&) {
      return 2000ms;
    }
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
  }

  pid_t ctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kCtl, "--bus=" + env_.address(), "--no-pager"};
    argv.insert(argv.end(), args.begin(), args.end());
    int out = -1;
    pid_t p = bustest::spawn(argv, &out, nullptr);
    if (out >= 0) pipes_.push_back(out);  // open until the end: no SIGPIPE for the child
    children_.push_back(p);
    return p;
  }
  // The exit status, or -1 when it did not end within `limit`.
  static int exitStatus(pid_t p, std::chrono::seconds limit) {
    int st = 0;
    const auto t0 = Clock::now();
    while (waitpid(p, &st, WNOHANG) == 0) {
      if (Clock::now() - t0 > limit) return -1;
      std::this_thread::sleep_for(10ms);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  fs::path tmp_;
  bustest::PrivateBus env_;
  bustest::HungFuse fuse_;
  std::vector<pid_t> children_;
  std::vector<int> pipes_;
  std::string device_;
};

TEST_F(LoopOffLoop, StatusAndBoostsStayOnTimeWhileLoopJobsHang) {
  // A device for the Detach calls to wait on.
  auto client = dbus::Client::connect(dbus::BusTarget::at(env_.address()));
  int dfd = open((tmp_ / "data.img").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(dfd, 0);
  auto made = client->loopSetup(dfd, {}, false);
  close(dfd);
  if (made.deviceFd >= 0) close(made.deviceFd);
  device_ = made.device.name;
  ASSERT_FALSE(device_.empty());
  // LoopList and the properties come through the worker too.
  bool listed = false;
  for (const auto& d : client->loopList(true)) listed = listed || d.name == device_;
  EXPECT_TRUE(listed) << device_ << " not in LoopList";
  EXPECT_EQ(client->loopShow(device_).backingFile, (tmp_ / "data.img").string());

  // The setup on a file whose file system never answers the daemon.
  const std::string why = fuse_.mount((tmp_ / "mnt").string());
  if (!why.empty()) GTEST_SKIP() << why;
  fuse_.hangFor(env_.serverPid());
  const pid_t setup = ctl({"loop", "add", (tmp_ / "mnt/img").string()});
  ASSERT_TRUE(timeUntil([&] { return fuse_.hung() > 0; }, 10s))
      << "the daemon never asked the FUSE file system";
  for (int i = 0; i < kDetaches; ++i) ctl({"loop", "detach", device_});
  std::this_thread::sleep_for(3s);  // 40 cxiosyncctl start and their calls reach the daemon

  auto conn = sdbus::createSessionBusConnectionWithAddress(env_.address());
  auto proxy = compat::createProxy(*conn, "org.cxiosync1", "/org/cxiosync1");
  std::vector<std::chrono::microseconds> took;
  for (int i = 0; i < 10; ++i) {
    took.push_back(statusLatency(*proxy));
    std::this_thread::sleep_for(20ms);
  }
  std::sort(took.begin(), took.end());
  std::printf("GetStatus while a setup hangs and %d detaches wait: median %lld us, worst %lld us\n",
              kDetaches, static_cast<long long>(took[5].count()),
              static_cast<long long>(took.back().count()));
  // A blocked loop answers none (2 s timeouts). The median, not the worst, is held to 100 ms:
  // on a loaded 2-core CI host one round trip through dbus-daemon can wait 200 ms for a CPU.
  EXPECT_LT(took[5], 100ms) << "GetStatus while loop jobs hang (median of 10)";
  EXPECT_LT(took.back(), 1000ms) << "GetStatus while loop jobs hang (worst of 10)";

  // A foreign sync from /system.slice waits on /slow's 1000 B/s: boosted, then restored.
  const fs::path ioMax = tmp_ / "cg/slow/io.max";
  addSyncer(tmp_ / "proc", 4242, "/system.slice");
  auto started = timeUntil([&] { return slurp(ioMax) != kLimited; }, 5s);
  ASSERT_TRUE(started) << "no boost while loop jobs hang; io.max: " << slurp(ioMax);
  fs::remove_all(tmp_ / "proc/4242");
  auto restored = timeUntil([&] { return slurp(ioMax) == kLimited; }, 5s);
  ASSERT_TRUE(restored) << "boost not restored; io.max: " << slurp(ioMax);
  std::printf("boost started after %lld ms, restored %lld ms after the syncer left\n",
              static_cast<long long>(started->count()), static_cast<long long>(restored->count()));
  // Two planner steps of 100 ms, with room for a loaded machine.
  EXPECT_LT(started->count(), 1000);
  EXPECT_LT(restored->count(), 1000);
  EXPECT_GT(fuse_.hung(), 0);

  // Let the file system go: the setup fails, the detaches run, every caller gets its answer.
  fuse_.stop();
  int ok = 0, answered = 0;
  for (pid_t p : children_) {
    const int rc = exitStatus(p, 30s);
    if (p == setup) {
      EXPECT_NE(rc, 0) << "the setup on the aborted file system succeeded";
      EXPECT_NE(rc, -1) << "the setup was never answered";
      continue;
    }
    answered += rc >= 0;
    ok += rc == 0;
  }
  children_.clear();
  EXPECT_EQ(answered, kDetaches) << "Detach calls left unanswered";
  EXPECT_GE(ok, 1) << "no Detach succeeded";
  EXPECT_TRUE(
      timeUntil([&] { return !fs::exists("/sys/block/" + device_ + "/loop/backing_file"); }, 5s))
      << device_ << " still bound";
  try {
    client->loopShow(device_);
    ADD_FAILURE() << device_ << " still shown after its Detach";
  } catch (const dbus::ClientError& e) {
    EXPECT_EQ(e.name(), "org.cxiosync1.Error.NoSuchDevice") << e.what();
  }
  EXPECT_TRUE(env_.serverAlive());
}

}  // namespace
