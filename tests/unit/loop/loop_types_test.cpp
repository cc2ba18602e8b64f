// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/loop_types.h"

#include <fcntl.h>
#include <gtest/gtest.h>

namespace cxiosync {
namespace {

TEST(LoopOptions, DirectIoModeParses) {
  EXPECT_EQ(*parseDirectIoMode("auto"), DirectIoMode::Auto);
  EXPECT_EQ(*parseDirectIoMode("on"), DirectIoMode::On);
  EXPECT_EQ(*parseDirectIoMode("off"), DirectIoMode::Off);
  EXPECT_EQ(*parseDirectIoMode("1"), DirectIoMode::On);
  auto bad = parseDirectIoMode("sometimes");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);
  EXPECT_NE(bad.error().message.find("sometimes"), std::string::npos);
}

TEST(LoopOptions, DefaultsAreDirectIoAuto) {
  LoopOptions o;
  EXPECT_EQ(o.directIo, DirectIoMode::Auto);
  EXPECT_FALSE(o.readOnly);
  EXPECT_EQ(o.blockSize, 0u);
  EXPECT_TRUE(validateLoopOptions(o));
}

TEST(LoopOptions, BlockSizeValidation) {
  LoopOptions o;
  for (uint32_t ok : {512u, 1024u, 2048u, 4096u, 65536u}) {
    o.blockSize = ok;
    EXPECT_TRUE(validateLoopOptions(o)) << ok;
  }
  for (uint32_t bad : {1u, 256u, 513u, 3000u, 131072u}) {
    o.blockSize = bad;
    auto s = validateLoopOptions(o);
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().code, EINVAL);
  }
}

TEST(LoopOptions, OffsetTooLarge) {
  LoopOptions o;
  o.offset = UINT64_MAX;
  EXPECT_FALSE(validateLoopOptions(o));
}

BackingInfo ext4File(uint32_t dioAlign) {
  BackingInfo b;
  b.accessMode = O_RDWR;
  b.isRegular = true;
  b.fsDevice = {8, 1};
  b.fsMagic = 0xEF53;
  b.dioAlignKnown = dioAlign != 0;
  b.dioOffsetAlign = dioAlign;
  b.bdevLogicalBlockSize = 512;
  b.size = 1 << 20;
  return b;
}

TEST(ChooseBlockSize, CallerWins) {
  LoopOptions o;
  o.blockSize = 1024;
  auto c = chooseBlockSize(o, ext4File(4096));
  EXPECT_EQ(c.size, 1024u);
  EXPECT_EQ(c.source, BlockSizeSource::Caller);
}

TEST(ChooseBlockSize, BufferedLeavesItToTheKernel) {
  LoopOptions o;
  o.directIo = DirectIoMode::Off;
  auto c = chooseBlockSize(o, ext4File(4096));
  EXPECT_EQ(c.size, 0u);
  EXPECT_EQ(c.source, BlockSizeSource::Default);
}

TEST(ChooseBlockSize, DirectIoUsesStatxAlignment) {
  LoopOptions o;
  auto c = chooseBlockSize(o, ext4File(4096));  // e.g. reflink XFS, 4Kn disks
  EXPECT_EQ(c.size, 4096u);
  EXPECT_EQ(c.source, BlockSizeSource::DioAlign);
  c = chooseBlockSize(o, ext4File(512));
  EXPECT_EQ(c.size, 512u);
}

TEST(ChooseBlockSize, SmallAlignmentClampedTo512) {
  LoopOptions o;
  auto c = chooseBlockSize(o, ext4File(1));
  EXPECT_EQ(c.size, 512u);
}

TEST(ChooseBlockSize, FallsBackToBackingBdev) {
  LoopOptions o;
  BackingInfo b = ext4File(0);  // no STATX_DIOALIGN (kernel < 6.1 or fs without it)
  b.bdevLogicalBlockSize = 4096;
  auto c = chooseBlockSize(o, b);
  EXPECT_EQ(c.size, 4096u);
  EXPECT_EQ(c.source, BlockSizeSource::BackingBdev);
}

TEST(ChooseBlockSize, NothingKnown) {
  LoopOptions o;
  BackingInfo b = ext4File(0);
  b.bdevLogicalBlockSize = 0;
  auto c = chooseBlockSize(o, b);
  EXPECT_EQ(c.size, 0u);
  EXPECT_EQ(c.source, BlockSizeSource::Default);
}

TEST(PredictDirectIo, NoneForAGoodSetup) {
  EXPECT_EQ(predictDirectIoRefusal(ext4File(512), 0, 512), "");
  EXPECT_EQ(predictDirectIoRefusal(ext4File(4096), 8192, 4096), "");
}

TEST(PredictDirectIo, FileWithoutDirectIo) {
  BackingInfo b = ext4File(0);
  b.dioAlignKnown = true;  // statx answered: alignment 0 = no direct I/O
  b.fsMagic = 0x01021994;
  auto why = predictDirectIoRefusal(b, 0, 512);
  EXPECT_NE(why.find("tmpfs"), std::string::npos) << why;
  EXPECT_NE(why.find("does not support direct I/O"), std::string::npos) << why;
}

TEST(PredictDirectIo, MisalignedOffset) {
  auto why = predictDirectIoRefusal(ext4File(4096), 512, 4096);
  EXPECT_NE(why.find("offset 512"), std::string::npos) << why;
}

TEST(PredictDirectIo, BlockSizeBelowAlignment) {
  auto why = predictDirectIoRefusal(ext4File(4096), 0, 512);
  EXPECT_NE(why.find("block size 512"), std::string::npos) << why;
}

TEST(ForeignOwner, Guesses) {
  EXPECT_EQ(guessForeignOwner("/var/lib/snapd/snaps/core22_1380.snap"), ForeignOwner::Snap);
  EXPECT_EQ(guessForeignOwner("/snap/x"), ForeignOwner::Snap);
  EXPECT_EQ(guessForeignOwner("/var/lib/portables/foo.raw"), ForeignOwner::Systemd);
  EXPECT_EQ(guessForeignOwner("/var/lib/extensions/a.raw (deleted)"), ForeignOwner::Systemd);
  EXPECT_EQ(guessForeignOwner("/home/alice.home"), ForeignOwner::Systemd);
  EXPECT_EQ(guessForeignOwner("/home/alice/disk.img"), ForeignOwner::Manual);
  EXPECT_EQ(guessForeignOwner("/run/udisks2/x.img"), ForeignOwner::Udisks);
  EXPECT_EQ(guessForeignOwner("/tmp/x.img"), ForeignOwner::Manual);
  EXPECT_STREQ(foreignOwnerName(ForeignOwner::Snap), "snap");
}

TEST(LoopName, Parses) {
  EXPECT_EQ(*parseLoopName("loop3"), 3);
  EXPECT_EQ(*parseLoopName("/dev/loop12"), 12);
  EXPECT_EQ(*parseLoopName("7"), 7);
  for (const char* bad : {"", "loop", "sda", "loop-1", "loop3p1", "/dev/loop", "99999999"})
    EXPECT_FALSE(parseLoopName(bad)) << bad;
}

TEST(FsMagic, Names) {
  EXPECT_STREQ(fsMagicName(0xEF53), "ext4");
  EXPECT_STREQ(fsMagicName(0x01021994), "tmpfs");
  EXPECT_STREQ(fsMagicName(0x12345678), "");
}

}  // namespace
}  // namespace cxiosync
