// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include <filesystem>

#include "daemon/blockdev/loop/loop_kernel.h"
#include "fake_loop_kernel.h"

namespace cxiosync {
namespace {

using testing::TempDir;
using testing::writeFile;
namespace fs = std::filesystem;

// A tree shaped like the real /sys (6.1 / 6.18): block/NAME -> devices/..., dev/block/M:m.
class LoopSysfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = tmp.path() + "/sys";
    const std::string virt = root + "/devices/virtual/block";
    // loop0: bound, direct I/O, 4096
    std::string l0 = virt + "/loop0";
    writeFile(l0 + "/dev", "7:0\n");
    writeFile(l0 + "/ro", "0\n");
    writeFile(l0 + "/size", "2048\n");
    writeFile(l0 + "/queue/logical_block_size", "4096\n");
    writeFile(l0 + "/queue/nr_requests", "128\n");
    writeFile(l0 + "/loop/backing_file", "/var/tmp/disk image.img\n");
    writeFile(l0 + "/loop/offset", "1048576\n");
    writeFile(l0 + "/loop/sizelimit", "0\n");
    writeFile(l0 + "/loop/autoclear", "1\n");
    writeFile(l0 + "/loop/partscan", "0\n");
    writeFile(l0 + "/loop/dio", "1\n");
    // loop1: unbound (no loop/ directory)
    std::string l1 = virt + "/loop1";
    writeFile(l1 + "/dev", "7:1\n");
    writeFile(l1 + "/ro", "0\n");
    writeFile(l1 + "/size", "0\n");
    writeFile(l1 + "/queue/logical_block_size", "512\n");
    // sda + sda1
    std::string sda = root + "/devices/pci0000:00/0000:00:04.0/virtio1/block/sda";
    writeFile(sda + "/dev", "8:0\n");
    writeFile(sda + "/queue/logical_block_size", "4096\n");
    writeFile(sda + "/sda1/dev", "8:1\n");
    writeFile(sda + "/sda1/partition", "1\n");
    fs::create_directories(root + "/block");
    fs::create_directories(root + "/dev/block");
    fs::create_directory_symlink("../devices/virtual/block/loop0", root + "/block/loop0");
    fs::create_directory_symlink("../devices/virtual/block/loop1", root + "/block/loop1");
    fs::create_directory_symlink("../devices/pci0000:00/0000:00:04.0/virtio1/block/sda",
                                 root + "/block/sda");
    fs::create_directory_symlink("../../devices/pci0000:00/0000:00:04.0/virtio1/block/sda",
                                 root + "/dev/block/8:0");
    fs::create_directory_symlink("../../devices/pci0000:00/0000:00:04.0/virtio1/block/sda/sda1",
                                 root + "/dev/block/8:1");
    sys = LoopSysfs::open(root).value();
  }
  TempDir tmp;
  std::string root;
  std::unique_ptr<LoopSysfs> sys;
};

TEST_F(LoopSysfsTest, ListsLoopDevicesOnly) {
  auto l = sys->listIndices();
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(*l, (std::vector<int>{0, 1}));
}

TEST_F(LoopSysfsTest, ReadsBoundDevice) {
  auto s = sys->read(0);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->bound);
  EXPECT_EQ(s->devnum, (DevNum{7, 0}));
  EXPECT_EQ(s->backingFile, "/var/tmp/disk image.img");
  EXPECT_EQ(s->offset, 1048576u);
  EXPECT_TRUE(s->autoclear);
  EXPECT_FALSE(s->partscan);
  EXPECT_TRUE(s->directIo);
  EXPECT_EQ(s->logicalBlockSize, 4096u);
  EXPECT_EQ(s->sizeBytes, 2048u * 512);
  EXPECT_EQ(s->requestDepth, 128u);
  EXPECT_FALSE(s->backingInode);  // sysfs does not tell; LOOP_GET_STATUS64 does
}

TEST_F(LoopSysfsTest, UnboundDevice) {
  auto s = sys->read(1);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->bound);
  EXPECT_EQ(s->logicalBlockSize, 512u);
}

TEST_F(LoopSysfsTest, MissingDeviceIsGone) {
  auto s = sys->read(9);
  ASSERT_FALSE(s);
  EXPECT_TRUE(isGone(s.error()));
}

TEST_F(LoopSysfsTest, BlockSizeOfPartitionComesFromItsDisk) {
  EXPECT_EQ(sys->logicalBlockSize({8, 0}), 4096u);
  EXPECT_EQ(sys->logicalBlockSize({8, 1}), 4096u);
  EXPECT_EQ(sys->logicalBlockSize({9, 9}), 0u);
}

TEST_F(LoopSysfsTest, WholeDisk) {
  EXPECT_EQ(sys->wholeDisk({8, 1}), (DevNum{8, 0}));
  EXPECT_EQ(sys->wholeDisk({8, 0}), (DevNum{8, 0}));
  EXPECT_EQ(sys->wholeDisk({9, 9}), (DevNum{9, 9}));
}

}  // namespace
}  // namespace cxiosync
