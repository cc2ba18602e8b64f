// SPDX-License-Identifier: GPL-2.0-or-later
// Queue depth of kernel loop devices through LoopManager, on the fake loop driver of
// tests/unit/loop (its sysfs tree is where nr_requests is written and read back).
#include <gtest/gtest.h>

#include <fstream>

#include "daemon/blockdev/devices/backend_devices.h"
#include "daemon/blockdev/loop/loop_manager.h"
#include "tests/unit/loop/fake_loop_kernel.h"

using namespace cxiosync;
using namespace cxiosync::testing;

namespace {

class LoopQueueDepthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = std::make_unique<FakeLoopKernel>(tmp.path(), 4);
    fake = k.get();
    fake->backing = ext4ImageBacking();
    LoopManagerOptions o;
    o.runDir = tmp.path() + "/run";
    o.sysRoot = tmp.path() + "/sys";
    o.detachWait = std::chrono::milliseconds(20);
    mgr = std::make_unique<LoopManager>(std::move(k), o);
  }
  std::string nrRequests(int i) {
    std::ifstream f(tmp.path() + "/sys/block/loop" + std::to_string(i) + "/queue/nr_requests");
    std::string s;
    f >> s;
    return s;
  }
  TempDir tmp;
  FakeLoopKernel* fake = nullptr;
  std::unique_ptr<LoopManager> mgr;
};

}  // namespace

TEST_F(LoopQueueDepthTest, AppliedAtSetupAndReadBack) {
  LoopOptions o;
  o.queueDepth = 32;
  auto r = mgr->setup(3, o, 1000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(nrRequests(0), "32");
  EXPECT_EQ(r->device.kernel.requestDepth, 32u);
  EXPECT_EQ(r->device.workers, 1);
  EXPECT_EQ(r->device.inFlightMax, r->device.kernel.directIo ? 32u : 1u);
  ASSERT_TRUE(r->device.record);
  EXPECT_EQ(r->device.record->options.queueDepth, 32u);
}

TEST_F(LoopQueueDepthTest, LiveChangeAndBounds) {
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r);
  auto d = mgr->setQueueDepth("loop0", 8, 1000);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->kernel.requestDepth, 8u);
  EXPECT_EQ(nrRequests(0), "8");
  for (uint32_t bad : {0u, 3u, 129u}) {
    auto e = mgr->setQueueDepth("loop0", bad, 1000);
    ASSERT_FALSE(e) << bad;
    EXPECT_EQ(e.error().code, EINVAL);
  }
  EXPECT_EQ(nrRequests(0), "8");
}

TEST_F(LoopQueueDepthTest, ForeignDevicesAreNotChanged) {
  fake->bindForeign(1, "/var/lib/snapd/snaps/x.snap");
  auto e = mgr->setQueueDepth("loop1", 16, 1000);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, EPERM);
  EXPECT_EQ(nrRequests(1), "128");
}

TEST_F(LoopQueueDepthTest, KernelBackendReportsWhatIsReal) {
  KernelLoopBackend kb(*mgr, tmp.path() + "/sys");
  BlockSetupOptions o;
  o.loop.queueDepth = 16;
  auto backing = mgr->kernel().inspectBacking(3);
  ASSERT_TRUE(backing) << backing.error().message;
  auto r = kb.setup(3, *backing, o, 1000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->device.backend, BackendKind::Kernel);
  EXPECT_EQ(r->device.workers, 1u);
  EXPECT_EQ(r->device.queueDepth, 16u);
  auto w = kb.setWorkers("loop0", 4, 1000, false);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, ENOTSUP);
  EXPECT_NE(w.error().message.find("no worker count"), std::string::npos);
  o.workers = 0;
  o.loop.queueDepth = 1000;
  EXPECT_FALSE(kb.setup(3, *backing, o, 1000));
}

TEST_F(LoopQueueDepthTest, ALaterSetupDoesNotInheritAnEarlierDepth) {
  std::filesystem::create_directories(tmp.path() + "/sys/module/loop/parameters");
  writeFile(tmp.path() + "/sys/module/loop/parameters/hw_queue_depth", "128\n");
  LoopOptions o;
  o.queueDepth = 4;
  auto r = mgr->setup(3, o, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(nrRequests(0), "4");
  r->deviceFd.reset();
  ASSERT_TRUE(mgr->detach("loop0", 1000));
  // The kernel keeps nr_requests across the detach (the fake's sysfs file stays too).
  writeFile(tmp.path() + "/sys/block/loop0/queue/nr_requests", "4\n");
  auto again = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->device.name, "loop0");
  EXPECT_EQ(nrRequests(0), "128");
}
