// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/sys_block.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "tests/unit/sense/fake_tree.h"

namespace cxiosync {
namespace {

using testing::FakeTree;

// A fake /sys with: sda (8:0) + partition sda1 (8:1), vda (254:0), loop0 (7:0) backed by
// a file on sda1, loop1 (7:1) unbound, loop2 (7:2) backed by a deleted file on vda,
// dm-0 (253:0) over sda1 and vda, md0 (9:0) over loop0.
class SysBlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    add("sda", "8:0", "devices/pci0000:00/0000:00:01.1/ata1/host0/target0:0:0/0:0:0:0/block");
    add("sda1", "8:1", "devices/pci0000:00/0000:00:01.1/ata1/host0/target0:0:0/0:0:0:0/block/sda");
    tree.file(dirOf("sda1") + "/partition", "1\n");
    add("vda", "254:0", "devices/pci0000:00/0000:00:04.0/virtio1/block");
    add("loop0", "7:0", "devices/virtual/block");
    tree.file(dirOf("loop0") + "/loop/backing_file", "/srv/images/disk.img\n");
    add("loop1", "7:1", "devices/virtual/block");
    tree.dir(dirOf("loop1") + "/loop");
    add("loop2", "7:2", "devices/virtual/block");
    tree.file(dirOf("loop2") + "/loop/backing_file", "/var/tmp/gone.img (deleted)\n");
    add("dm-0", "253:0", "devices/virtual/block");
    tree.symlink("../../../../" + dirOf("sda1"), dirOf("dm-0") + "/slaves/sda1");
    tree.symlink("../../../../" + dirOf("vda"), dirOf("dm-0") + "/slaves/vda");
    add("md0", "9:0", "devices/virtual/block");
    tree.symlink("../../../../" + dirOf("loop0"), dirOf("md0") + "/slaves/loop0");

    auto sys = SysBlock::open(tree.root(), [this](const std::string& p) -> Result<DevNum> {
      stats.push_back(p);
      if (p == "/srv/images/disk.img") return DevNum{8, 1};
      if (p == "/var/tmp/gone.img") return DevNum{254, 0};
      return Error{ENOENT, "stat " + p};
    });
    ASSERT_TRUE(sys.ok()) << sys.error().message;
    sb = std::move(*sys);
  }
  std::string dirOf(const std::string& name) { return dirs[name]; }
  void add(const std::string& name, const std::string& dev, const std::string& parent) {
    std::string d = parent + "/" + name;
    dirs[name] = d;
    tree.file(d + "/dev", dev + "\n");
    tree.symlink("../../" + d, "class/block/" + name);
    tree.symlink("../../" + d, "dev/block/" + dev);
  }
  FakeTree tree;
  std::map<std::string, std::string> dirs;
  std::vector<std::string> stats;
  std::unique_ptr<SysBlock> sb;
};

TEST_F(SysBlockTest, NamesAndNumbers) {
  EXPECT_EQ(*sb->nameOf(DevNum{8, 1}), "sda1");
  EXPECT_EQ(*sb->nameOf(DevNum{253, 0}), "dm-0");
  EXPECT_EQ(*sb->devOf("vda"), (DevNum{254, 0}));
  auto missing = sb->nameOf(DevNum{99, 9});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(isGone(missing.error()));
  EXPECT_FALSE(sb->devOf("../etc").ok());
  auto all = sb->list();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 8u);
  EXPECT_EQ(all->front(), (DevNum{7, 0}));
}

TEST_F(SysBlockTest, PartitionMapsToWholeDisk) {
  EXPECT_TRUE(sb->isPartition(DevNum{8, 1}));
  EXPECT_FALSE(sb->isPartition(DevNum{8, 0}));
  EXPECT_EQ(*sb->wholeDisk(DevNum{8, 1}), (DevNum{8, 0}));
  EXPECT_EQ(*sb->wholeDisk(DevNum{8, 0}), (DevNum{8, 0}));
  EXPECT_EQ(*sb->wholeDisk(DevNum{253, 0}), (DevNum{253, 0}));
}

TEST_F(SysBlockTest, LoopFollowsBackingFileToWholeDisk) {
  auto f = sb->loopBackingFile(DevNum{7, 0});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->value_or(""), "/srv/images/disk.img");
  EXPECT_EQ(*sb->lowerOf(DevNum{7, 0}), (std::vector<DevNum>{{8, 0}}));
  // Unbound loop device: no edge. Deleted backing file: the suffix is stripped.
  EXPECT_TRUE(sb->lowerOf(DevNum{7, 1})->empty());
  EXPECT_EQ(*sb->lowerOf(DevNum{7, 2}), (std::vector<DevNum>{{254, 0}}));
  EXPECT_EQ(stats, (std::vector<std::string>{"/srv/images/disk.img", "/var/tmp/gone.img"}));
  // Plain disks have nothing below.
  EXPECT_TRUE(sb->lowerOf(DevNum{8, 0})->empty());
}

TEST_F(SysBlockTest, DmAndMdFollowSlaves) {
  EXPECT_EQ(*sb->lowerOf(DevNum{253, 0}), (std::vector<DevNum>{{8, 0}, {254, 0}}));
  EXPECT_EQ(*sb->lowerOf(DevNum{9, 0}), (std::vector<DevNum>{{7, 0}}));
}

TEST_F(SysBlockTest, BuildsTheWholeStack) {
  DeviceStack st = sb->buildStack();
  EXPECT_EQ(st.lower.size(), 4u);  // loop0, loop2, dm-0, md0
  EXPECT_EQ(st.lower[(DevNum{9, 0})], (std::vector<DevNum>{{7, 0}}));
  EXPECT_EQ(st.lower[(DevNum{7, 0})], (std::vector<DevNum>{{8, 0}}));
  EXPECT_EQ(st.lower.count((DevNum{8, 1})), 0u);  // partitions are not edges
}

TEST_F(SysBlockTest, FilesystemDeviceOfAnonymousDevViaMountInfo) {
  EXPECT_EQ(*filesystemDevice(DevNum{8, 1}, "", *sb), (DevNum{8, 1}));
  const std::string mi =
      "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
      "30 1 0:35 / /srv rw,relatime - btrfs /dev/vda rw,space_cache\n"
      "31 1 0:36 / /mnt rw - overlay overlay rw\n";
  auto d = filesystemDevice(DevNum{0, 35}, mi, *sb);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(*d, (DevNum{254, 0}));
  EXPECT_FALSE(filesystemDevice(DevNum{0, 36}, mi, *sb).ok());
}

// A loop backed by a block device (losetup /dev/sdb): the default stat function must give
// the device itself (st_rdev), not devtmpfs's anonymous st_dev (major 0, dropped as "no
// io.max"). Uses a real block device node of this host (/dev/loopN exist wherever the loop
// module is loaded).
TEST_F(SysBlockTest, LoopBackedByABlockDeviceFollowsTheDeviceItself) {
  std::string node;
  struct stat st {};
  for (int i = 0; i < 8 && node.empty(); ++i) {
    std::string p = "/dev/loop" + std::to_string(i);
    if (::stat(p.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) node = p;
  }
  if (node.empty()) GTEST_SKIP() << "no /dev/loopN block device node on this host";
  const DevNum rdev = devNumFromDevT(st.st_rdev);
  auto viaStat = statDevice(node);
  ASSERT_TRUE(viaStat.ok()) << viaStat.error().message;
  EXPECT_EQ(*viaStat, rdev) << "st_rdev of the node, not st_dev of devtmpfs";
  EXPECT_NE(viaStat->major, 0u);

  // loop99 (7:99) in the fake tree, backed by that node.
  add("loop99", "7:99", "devices/virtual/block");
  tree.file(dirOf("loop99") + "/loop/backing_file", node + "\n");
  auto real = SysBlock::open(tree.root());  // default stat function
  ASSERT_TRUE(real.ok()) << real.error().message;
  auto lower = (*real)->lowerOf(DevNum{7, 99});
  ASSERT_TRUE(lower.ok()) << lower.error().message;
  EXPECT_EQ(*lower, (std::vector<DevNum>{rdev}));
}

}  // namespace
}  // namespace cxiosync
