// SPDX-License-Identifier: GPL-2.0-or-later
// Real loop devices on the machine running the tests. Skips (never fails) when that is not
// possible: not root, no usable /dev/loop-control, or CXIOSYNC_SKIP_HOST_LOOP=1. Every test
// removes what it created; the fixture checks that no device backed by its file is left.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <cstdlib>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon/blockdev/loop/loop_manager.h"
#include "fake_loop_kernel.h"

namespace cxiosync {
namespace {

using testing::TempDir;

std::string skipReason() {
  if (const char* e = std::getenv("CXIOSYNC_SKIP_HOST_LOOP"); e && std::string(e) == "1")
    return "CXIOSYNC_SKIP_HOST_LOOP=1";
  if (::geteuid() != 0) return "not root";
  int fd = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (fd < 0) return "/dev/loop-control: " + std::string(std::strerror(errno));
  int n = ::ioctl(fd, LOOP_CTL_GET_FREE);
  int e = errno;
  ::close(fd);
  if (n < 0) return "LOOP_CTL_GET_FREE: " + std::string(std::strerror(e));
  if (!std::filesystem::exists("/sys/block")) return "no /sys/block";
  return "";
}

class LoopHost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = skipReason(); !why.empty()) GTEST_SKIP() << why;
    dir = std::make_unique<TempDir>();
    // Backing file on the same filesystem as the build (a disk filesystem on CI machines).
    char tmpl[] = "/var/tmp/cxiosync-loop-host.XXXXXX";
    int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    image = tmpl;
    ASSERT_EQ(::ftruncate(fd, 32 << 20), 0);
    ::close(fd);
    LoopManagerOptions o;
    o.runDir = dir->path() + "/run";
    auto m = LoopManager::create(o);
    ASSERT_TRUE(m) << m.error().message;
    mgr = std::move(m).value();
  }
  void TearDown() override {
    if (!mgr) return;
    // Whatever a failed test left behind, by backing file: never leak a device.
    if (auto l = mgr->list(true)) {
      for (const auto& d : *l) {
        if (d.kernel.backingFile.rfind(image, 0) == 0) {
          leaked.push_back(d.name);
          (void)mgr->detach(d.name, 0, true);
        }
      }
    }
    EXPECT_TRUE(leaked.empty()) << "leaked " << leaked.size() << " device(s), e.g. " << leaked[0];
    ::unlink(image.c_str());
  }
  int openImage(int flags) {
    int fd = ::open(image.c_str(), flags | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    return fd;
  }
  std::string sysfs(const std::string& name, const std::string& attr) {
    std::ifstream f("/sys/block/" + name + "/" + attr);
    std::string s;
    std::getline(f, s);
    return s;
  }

  std::unique_ptr<TempDir> dir;
  std::string image;
  std::unique_ptr<LoopManager> mgr;
  std::vector<std::string> leaked;
};

TEST_F(LoopHost, SetupReadsBackEffectiveStateAndDetaches) {
  int fd = openImage(O_RDWR);
  auto r = mgr->setup(fd, LoopOptions{}, 0);
  ::close(fd);
  ASSERT_TRUE(r) << r.error().message;
  const std::string name = r->device.name;
  EXPECT_TRUE(r->usedLoopConfigure);  // every kernel since 5.8
  EXPECT_EQ(sysfs(name, "loop/dio") == "1", r->directIoEffective);
  EXPECT_EQ(std::to_string(r->blockSize), sysfs(name, "queue/logical_block_size"));
  if (!r->directIoEffective) {
    EXPECT_FALSE(r->directIoNote.empty());
  }
  EXPECT_EQ(sysfs(name, "loop/backing_file"), image);
  ASSERT_TRUE(r->device.backingDevice);
  struct stat st;
  ASSERT_EQ(::stat(image.c_str(), &st), 0);
  EXPECT_EQ(r->device.backingDevice->major, major(st.st_dev));
  EXPECT_EQ(*r->device.kernel.backingInode, st.st_ino);
  EXPECT_FALSE(r->device.foreign);
  r->deviceFd.reset();
  auto d = mgr->detach(name, 0);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->detached) << d->note;
  EXPECT_FALSE(std::filesystem::exists("/sys/block/" + name + "/loop"));
}

TEST_F(LoopHost, EveryOptionReachesTheKernel) {
  int fd = openImage(O_RDWR);
  LoopOptions o;
  o.offset = 1 << 20;
  o.sizeLimit = 8 << 20;
  o.partscan = true;
  o.readOnly = true;
  o.blockSize = 4096;
  auto r = mgr->setup(fd, o, 0);
  ::close(fd);
  ASSERT_TRUE(r) << r.error().message;
  const std::string name = r->device.name;
  EXPECT_EQ(sysfs(name, "loop/offset"), "1048576");
  EXPECT_EQ(sysfs(name, "loop/sizelimit"), "8388608");
  EXPECT_EQ(sysfs(name, "loop/partscan"), "1");
  EXPECT_EQ(sysfs(name, "ro"), "1");
  EXPECT_EQ(sysfs(name, "queue/logical_block_size"), "4096");
  EXPECT_EQ(sysfs(name, "size"), std::to_string((8 << 20) / 512));
  r->deviceFd.reset();
  ASSERT_TRUE(mgr->detach(name, 0));
}

TEST_F(LoopHost, ReadOnlyFdGivesReadOnlyDevice) {
  int fd = openImage(O_RDONLY);
  auto r = mgr->setup(fd, LoopOptions{}, 1000);  // read-only not asked for
  ::close(fd);
  ASSERT_TRUE(r) << r.error().message;
  const std::string name = r->device.name;
  EXPECT_EQ(sysfs(name, "ro"), "1");
  EXPECT_TRUE(r->device.kernel.readOnly);
  // Opening for writing may succeed; writing must not.
  int w = ::open(r->device.path.c_str(), O_WRONLY | O_CLOEXEC);
  if (w >= 0) {
    char buf[4096] = {};
    EXPECT_LT(::pwrite(w, buf, sizeof buf, 0), 0) << "a read-only fd gave a writable device";
    ::close(w);
  }
  r->deviceFd.reset();
  ASSERT_TRUE(mgr->detach(name, 1000));
}

TEST_F(LoopHost, LiveChanges) {
  int fd = openImage(O_RDWR);
  LoopOptions o;
  o.directIo = DirectIoMode::Off;
  auto r = mgr->setup(fd, o, 0);
  ::close(fd);
  ASSERT_TRUE(r) << r.error().message;
  const std::string name = r->device.name;
  EXPECT_EQ(sysfs(name, "loop/dio"), "0");
  auto bs = mgr->setBlockSize(name, 4096, 0);
  ASSERT_TRUE(bs) << bs.error().message;
  EXPECT_EQ(sysfs(name, "queue/logical_block_size"), "4096");
  auto on = mgr->setDirectIO(name, true, 0);
  if (on) {
    EXPECT_EQ(sysfs(name, "loop/dio"), "1");
  }
  auto off = mgr->setDirectIO(name, false, 0);
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(sysfs(name, "loop/dio"), "0");
  ASSERT_EQ(::truncate(image.c_str(), 48 << 20), 0);
  auto cap = mgr->setCapacity(name, 0);
  ASSERT_TRUE(cap) << cap.error().message;
  EXPECT_EQ(cap->kernel.sizeBytes, 48u << 20);
  r->deviceFd.reset();
  ASSERT_TRUE(mgr->detach(name, 0));
}

TEST_F(LoopHost, DetachWhileOpenIsLazy) {
  int fd = openImage(O_RDWR);
  auto r = mgr->setup(fd, LoopOptions{}, 0);
  ::close(fd);
  ASSERT_TRUE(r) << r.error().message;
  const std::string name = r->device.name;
  // r->deviceFd is still open: a user of the device.
  auto d = mgr->detach(name, 0);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->lazy);
  EXPECT_FALSE(d->detached);
  EXPECT_EQ(sysfs(name, "loop/autoclear"), "1");
  r->deviceFd.reset();  // the last user goes: the kernel detaches it
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !std::filesystem::exists("/sys/block/" + name + "/loop");
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
}

TEST_F(LoopHost, AutoclearLivesAsLongAsTheReturnedFd) {
  int fd = openImage(O_RDWR);
  LoopOptions o;
  o.autoclear = true;
  auto r = mgr->setup(fd, o, 0);
  ::close(fd);
  ASSERT_TRUE(r) << r.error().message;
  const std::string name = r->device.name;
  EXPECT_EQ(sysfs(name, "loop/autoclear"), "1");
  r->deviceFd.reset();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !std::filesystem::exists("/sys/block/" + name + "/loop");
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
}

TEST_F(LoopHost, SetAutoclearOnAnUnusedDeviceDetachesIt) {
  int fd = openImage(O_RDWR);
  auto r = mgr->setup(fd, LoopOptions{}, 0);
  ::close(fd);
  ASSERT_TRUE(r) << r.error().message;
  const std::string name = r->device.name;
  r->deviceFd.reset();
  auto a = mgr->setAutoclear(name, true, 0);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_FALSE(a->kernel.bound);
  EXPECT_FALSE(std::filesystem::exists("/sys/block/" + name + "/loop"));
}

}  // namespace
}  // namespace cxiosync
