// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/loop/loop_manager.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "fake_loop_kernel.h"

namespace cxiosync {
namespace {

using testing::ext4ImageBacking;
using testing::FakeLoopKernel;
using testing::TempDir;

class LoopManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = std::make_unique<FakeLoopKernel>(tmp.path(), 4);
    fake = k.get();
    fake->backing = ext4ImageBacking();
    LoopManagerOptions o;
    o.runDir = tmp.path() + "/run";
    o.now = [] { return int64_t{1700000000}; };
    o.maxAttempts = 5;
    o.detachWait = std::chrono::milliseconds(20);
    mgr = std::make_unique<LoopManager>(std::move(k), o);
  }
  bool clearedIndex(int i) const {
    return std::count(fake->cleared.begin(), fake->cleared.end(), i) > 0;
  }

  TempDir tmp;
  FakeLoopKernel* fake = nullptr;
  std::unique_ptr<LoopManager> mgr;
};

TEST_F(LoopManagerTest, SetupDirectIoByDefaultWithMatchingBlockSize) {
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->device.name, "loop0");
  EXPECT_TRUE(r->usedLoopConfigure);
  EXPECT_TRUE(r->directIoRequested);
  EXPECT_TRUE(r->directIoEffective);
  EXPECT_EQ(r->blockSize, 4096u);
  EXPECT_EQ(r->blockSizeSource, BlockSizeSource::DioAlign);
  EXPECT_TRUE(r->directIoNote.empty());
  EXPECT_TRUE(r->deviceFd.valid());
  EXPECT_FALSE(r->device.foreign);
  ASSERT_TRUE(r->device.record);
  EXPECT_EQ(r->device.record->uid, 1000u);
  EXPECT_EQ(r->device.record->createdUnix, 1700000000);
  ASSERT_TRUE(r->device.backingDevice);
  EXPECT_EQ(*r->device.backingDevice, (DevNum{8, 1}));
  // One atomic call, no two-step setup.
  EXPECT_EQ(std::count(fake->calls.begin(), fake->calls.end(), "SET_FD loop0"), 0);
}

TEST_F(LoopManagerTest, AllOptionsReachTheKernel) {
  LoopOptions o;
  o.offset = 8192;
  o.sizeLimit = 1 << 20;
  o.partscan = true;
  o.readOnly = true;
  o.blockSize = 4096;
  auto r = mgr->setup(3, o, 0);
  ASSERT_TRUE(r) << r.error().message;
  const auto& k = r->device.kernel;
  EXPECT_EQ(k.offset, 8192u);
  EXPECT_EQ(k.sizeLimit, 1u << 20);
  EXPECT_TRUE(k.partscan);
  EXPECT_TRUE(k.readOnly);
  EXPECT_EQ(k.logicalBlockSize, 4096u);
  EXPECT_EQ(r->blockSizeSource, BlockSizeSource::Caller);
}

TEST_F(LoopManagerTest, RaceWithAnotherLoopUserTakesTheNextDeviceAndNeverClearsTheirs) {
  // losetup -f wins loop0 between our GET_FREE and LOOP_CONFIGURE.
  fake->raceBeforeConfigure = [&](int i) {
    if (i == 0 && !fake->devs[0].bound) fake->bindForeign(0, "/home/u/theirs.img");
  };
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->device.name, "loop1");
  EXPECT_EQ(r->attempts, 2);
  EXPECT_FALSE(clearedIndex(0));
  EXPECT_TRUE(fake->devs[0].bound);
  EXPECT_EQ(fake->devs[0].backing, "/home/u/theirs.img");
  EXPECT_GE(fake->sleeps, 1);
}

TEST_F(LoopManagerTest, GivesUpAfterTheRetryBudget) {
  fake->configureErrno = EBUSY;
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EBUSY);
  EXPECT_NE(r.error().message.find("after 5 attempts"), std::string::npos) << r.error().message;
  EXPECT_TRUE(fake->cleared.empty());
}

TEST_F(LoopManagerTest, OldKernelFallsBackToSetFdAndStatus) {
  fake->configureErrno = ENOTTY;
  LoopOptions o;
  o.autoclear = true;
  o.offset = 4096;
  auto r = mgr->setup(3, o, 1000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->usedLoopConfigure);
  EXPECT_TRUE(r->device.kernel.autoclear);
  EXPECT_EQ(r->device.kernel.offset, 4096u);
  EXPECT_EQ(r->device.kernel.logicalBlockSize, 4096u);
  EXPECT_TRUE(r->directIoEffective);
  // The second setup does not try LOOP_CONFIGURE again.
  auto before = std::count_if(fake->calls.begin(), fake->calls.end(),
                              [](const std::string& c) { return c.rfind("CONFIGURE", 0) == 0; });
  ASSERT_TRUE(mgr->setup(3, LoopOptions{}, 1000));
  auto after = std::count_if(fake->calls.begin(), fake->calls.end(),
                             [](const std::string& c) { return c.rfind("CONFIGURE", 0) == 0; });
  EXPECT_EQ(before, after);
}

TEST_F(LoopManagerTest, DirectIoRefusedAutoFallsBackAndSaysWhy) {
  fake->dioWorks = false;
  fake->backing.dioAlignKnown = false;  // the kernel will not say beforehand
  fake->backing.fsDevice = {0, 45};
  fake->backing.bdevLogicalBlockSize = 0;
  fake->backing.fsMagic = 0x01021994;
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->directIoRequested);
  EXPECT_FALSE(r->directIoEffective);
  EXPECT_NE(r->directIoNote.find("tmpfs"), std::string::npos) << r->directIoNote;
  ASSERT_TRUE(r->device.record);
  EXPECT_EQ(r->device.record->directIoNote, r->directIoNote);  // shown in list later
  EXPECT_FALSE(r->device.backingDevice);                       // tmpfs: no block device below
}

TEST_F(LoopManagerTest, DirectIoRefusedOnFailsAndLeavesNothing) {
  fake->dioWorks = false;
  fake->backing.dioAlignKnown = false;
  LoopOptions o;
  o.directIo = DirectIoMode::On;
  auto r = mgr->setup(3, o, 1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("direct I/O refused"), std::string::npos) << r.error().message;
  EXPECT_TRUE(clearedIndex(0));
  EXPECT_FALSE(fake->devs[0].bound);
  auto l = mgr->list(true);
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->empty());
}

TEST_F(LoopManagerTest, DirectIoImpossibleKnownBeforehand) {
  fake->backing.dioOffsetAlign = 0;  // statx: no direct I/O on this file
  LoopOptions o;
  o.directIo = DirectIoMode::On;
  auto r = mgr->setup(3, o, 1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_TRUE(fake->calls.empty()) << "nothing asked of the kernel";
  o.directIo = DirectIoMode::Auto;
  auto a = mgr->setup(3, o, 1000);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->directIoEffective);
  EXPECT_NE(a->directIoNote.find("does not support direct I/O"), std::string::npos);
}

TEST_F(LoopManagerTest, ProbesLargerBlockSizeWhenAlignmentUnknown) {
  fake->backing.dioAlignKnown = false;
  fake->backing.bdevLogicalBlockSize = 512;
  fake->dioMinBlock = 4096;  // a 4Kn-like backing that reports 512
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->directIoEffective);
  EXPECT_EQ(r->blockSize, 4096u);
  EXPECT_EQ(r->blockSizeSource, BlockSizeSource::Probe);
}

TEST_F(LoopManagerTest, OffMeansBuffered) {
  LoopOptions o;
  o.directIo = DirectIoMode::Off;
  auto r = mgr->setup(3, o, 1000);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->directIoRequested);
  EXPECT_FALSE(r->directIoEffective);
  EXPECT_EQ(r->blockSize, 512u);
  EXPECT_TRUE(r->directIoNote.empty());
}

TEST_F(LoopManagerTest, ReadOnlyFdGivesReadOnlyDevice) {
  fake->backing.accessMode = O_RDONLY;
  auto r = mgr->setup(3, LoopOptions{}, 1000);  // caller did not ask for read-only
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->device.kernel.readOnly);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("read-only"), std::string::npos);
}

TEST_F(LoopManagerTest, WriteOnlyAndOddFdsRefused) {
  fake->backing.accessMode = O_WRONLY;
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EBADF);
  fake->backing.accessMode = O_RDWR;
  fake->backing.isRegular = false;
  r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
}

TEST_F(LoopManagerTest, OffsetBeyondEndRefused) {
  LoopOptions o;
  o.offset = 64 << 20;
  auto r = mgr->setup(3, o, 1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
}

TEST_F(LoopManagerTest, ListMarksForeignDevicesAndGuessesTheOwner) {
  fake->bindForeign(0, "/var/lib/snapd/snaps/core22_1.snap");
  fake->bindForeign(1, "/home/u/manual.img");
  auto ours = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(ours);
  EXPECT_EQ(ours->device.name, "loop2");
  auto all = mgr->list(true);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_TRUE((*all)[0].foreign);
  EXPECT_EQ((*all)[0].foreignOwner, ForeignOwner::Snap);
  EXPECT_EQ((*all)[1].foreignOwner, ForeignOwner::Manual);
  EXPECT_FALSE((*all)[2].foreign);
  auto mine = mgr->list(false);
  ASSERT_TRUE(mine);
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ((*mine)[0].name, "loop2");
}

TEST_F(LoopManagerTest, ForeignDevicesAreNeverChangedWithoutRootAndForce) {
  fake->bindForeign(0, "/var/lib/snapd/snaps/core22_1.snap");
  auto d = mgr->detach("loop0", 1000, true);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, EPERM);
  EXPECT_NE(d.error().message.find("snap"), std::string::npos);
  d = mgr->detach("loop0", 0, false);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, EPERM);
  EXPECT_FALSE(mgr->setDirectIO("loop0", true, 0));
  EXPECT_FALSE(mgr->setBlockSize("loop0", 4096, 0));
  EXPECT_FALSE(mgr->setCapacity("loop0", 0));
  EXPECT_TRUE(fake->cleared.empty());
  d = mgr->detach("/dev/loop0", 0, true);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->detached);
}

TEST_F(LoopManagerTest, AccessFacts) {
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(loopAccess(r->device, 1000, false), LoopAccess::Allowed);
  EXPECT_EQ(loopAccess(r->device, 0, false), LoopAccess::Allowed);
  EXPECT_EQ(loopAccess(r->device, 1001, false), LoopAccess::NeedsOthersAuthorization);
  LoopDeviceInfo foreign;
  EXPECT_EQ(loopAccess(foreign, 1000, true), LoopAccess::Refused);
  EXPECT_EQ(loopAccess(foreign, 0, false), LoopAccess::Refused);
  EXPECT_EQ(loopAccess(foreign, 0, true), LoopAccess::Allowed);
}

TEST_F(LoopManagerTest, DetachDropsTheRecord) {
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r);
  r->deviceFd.reset();
  auto d = mgr->detach("loop0", 1000);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->detached);
  EXPECT_FALSE(d->lazy);
  auto recs = LoopStateStore(mgr->options().runDir).load();
  ASSERT_TRUE(recs);
  EXPECT_TRUE(recs->empty());
  auto s = mgr->show("loop0");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ENOENT);
}

TEST_F(LoopManagerTest, DetachOfBusyDeviceIsLazyAndSaysSo) {
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r);
  fake->devs[0].busy = true;  // mounted
  auto d = mgr->detach("loop0", 1000);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->detached);
  EXPECT_TRUE(d->lazy);
  EXPECT_TRUE(fake->devs[0].flags & LO_FLAGS_AUTOCLEAR);
  EXPECT_NE(d->note.find("autoclear"), std::string::npos);
}

TEST_F(LoopManagerTest, DetachBusyOnOldKernelsSetsAutoclear) {
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r);
  fake->devs[0].busy = true;
  fake->clrFdBusyErrno = true;
  auto d = mgr->detach("loop0", 1000);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->lazy);
  EXPECT_TRUE(fake->devs[0].flags & LO_FLAGS_AUTOCLEAR);
  EXPECT_TRUE(fake->devs[0].bound);
}

TEST_F(LoopManagerTest, LiveDirectIoAndBlockSize) {
  LoopOptions o;
  o.directIo = DirectIoMode::Off;
  auto r = mgr->setup(3, o, 1000);
  ASSERT_TRUE(r);
  fake->dioMinBlock = 4096;
  auto refused = mgr->setDirectIO("loop0", true, 1000);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, EINVAL);
  EXPECT_NE(refused.error().message.find("logical block size 512"), std::string::npos)
      << refused.error().message;
  auto bs = mgr->setBlockSize("loop0", 4096, 1000);
  ASSERT_TRUE(bs) << bs.error().message;
  EXPECT_EQ(bs->kernel.logicalBlockSize, 4096u);
  auto on = mgr->setDirectIO("loop0", true, 1000);
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_TRUE(on->kernel.directIo);
  ASSERT_TRUE(on->record);
  EXPECT_EQ(on->record->options.directIo, DirectIoMode::On);
  auto off = mgr->setDirectIO("loop0", false, 1000);
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->kernel.directIo);
  EXPECT_FALSE(mgr->setBlockSize("loop0", 3000, 1000));
  ASSERT_TRUE(mgr->setCapacity("loop0", 1000));
}

TEST_F(LoopManagerTest, ReconcileDropsRecordsOfDevicesTakenOver) {
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r);
  // Someone detached it and bound another file to the same device.
  fake->devs[0] = testing::FakeDev{};
  fake->bindForeign(0, "/other.img", {8, 1}, 12345);
  auto rr = mgr->reconcile();
  ASSERT_TRUE(rr) << rr.error().message;
  EXPECT_TRUE(rr->kept.empty());
  ASSERT_EQ(rr->dropped.size(), 1u);
  auto s = mgr->show("loop0");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->foreign);
}

TEST_F(LoopManagerTest, CorruptStateFileDoesNotWedgeTheManager) {
  std::filesystem::create_directories(mgr->options().runDir);
  testing::writeFile(mgr->options().runDir + "/loops.json", "garbage{");
  auto r = mgr->setup(3, LoopOptions{}, 1000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->device.foreign);
  EXPECT_TRUE(std::filesystem::exists(mgr->options().runDir + "/loops.json.bad"));
}

TEST_F(LoopManagerTest, SetAutoclearKeepsOffsetAndSizeLimit) {
  LoopOptions o;
  o.offset = 4096;
  o.sizeLimit = 1 << 20;
  auto r = mgr->setup(3, o, 1000);
  ASSERT_TRUE(r);
  auto a = mgr->setAutoclear("loop0", true, 1000);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_TRUE(a->kernel.bound);  // the fake keeps it: "someone holds it"
  EXPECT_TRUE(a->kernel.autoclear);
  EXPECT_EQ(a->kernel.offset, 4096u);
  EXPECT_EQ(a->kernel.sizeLimit, 1u << 20);
  auto b = mgr->setAutoclear("loop0", false, 1000);
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->kernel.autoclear);
}

}  // namespace
}  // namespace cxiosync
