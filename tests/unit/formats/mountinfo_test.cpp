// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/mountinfo.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

TEST(MountInfo, ParsesProcManExample) {
  auto r = parseMountInfo(
      "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  const auto& m = (*r)[0];
  EXPECT_EQ(m.mountId, 36u);
  EXPECT_EQ(m.parentId, 35u);
  EXPECT_EQ(m.dev, (DevNum{98, 0}));
  EXPECT_EQ(m.root, "/mnt1");
  EXPECT_EQ(m.mountPoint, "/mnt/parent");
  EXPECT_EQ(m.options, "rw,noatime");
  ASSERT_EQ(m.optionalFields.size(), 1u);
  EXPECT_EQ(m.optionalFields[0], "master:1");
  EXPECT_EQ(m.fsType, "ext3");
  EXPECT_EQ(m.source, "/dev/root");
  EXPECT_EQ(m.superOptions, "rw,errors=continue");
}

TEST(MountInfo, ParsesTypicalSystem) {
  auto r = parseMountInfo(
      "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
      "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
      "24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
      "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
      "rw,nsdelegate,memory_recursiveprot\n"
      "40 22 254:16 / /mnt/data rw,relatime - ext4 /dev/vdb rw\n"
      "41 22 0:40 / /tmp rw shared:5 master:3 propagate_from:2 unbindable - tmpfs tmpfs rw\n"
      "42 22 7:0 / /mnt/img ro,relatime shared:7 - squashfs /dev/loop0 ro");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 7u);
  EXPECT_EQ((*r)[0].dev, (DevNum{254, 1}));
  EXPECT_EQ((*r)[3].fsType, "cgroup2");
  EXPECT_TRUE((*r)[4].optionalFields.empty());
  EXPECT_EQ((*r)[5].optionalFields.size(), 4u);
  EXPECT_EQ((*r)[5].optionalFields[3], "unbindable");
  EXPECT_EQ((*r)[6].superOptions, "ro");
}

TEST(MountInfo, UnescapesOctal) {
  auto r = parseMountInfo(
      "50 22 0:45 /a\\040b /mnt/with\\040space\\011tab\\012nl\\134bs rw - fuse.sshfs "
      "user@host:/x\\040y rw,user_id=0\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& m = (*r)[0];
  EXPECT_EQ(m.root, "/a b");
  EXPECT_EQ(m.mountPoint, "/mnt/with space\ttab\nnl\\bs");
  EXPECT_EQ(m.fsType, "fuse.sshfs");
  EXPECT_EQ(m.source, "user@host:/x y");
}

TEST(MountInfo, LiteralBackslashesKeptWhenNotAnEscape) {
  auto r = parseMountInfo("1 0 0:1 / /a\\b\\9\\400\\12 rw - tmpfs tmpfs rw\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].mountPoint, "/a\\b\\9\\400\\12");
  auto t = parseMountInfo("1 0 0:1 / /a\\ rw - tmpfs tmpfs rw\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0].mountPoint, "/a\\");
}

TEST(MountInfo, EmptySourceIsTwoSpaces) {
  auto r = parseMountInfo("60 22 0:50 / /mnt/x rw - tmpfs  rw,size=1024k\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].source, "");
  EXPECT_EQ((*r)[0].superOptions, "rw,size=1024k");
}

TEST(MountInfo, EmptyFileAndCrlf) {
  auto e = parseMountInfo("");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->empty());
  auto c = parseMountInfo("1 0 0:1 / / rw - tmpfs tmpfs rw\r\n\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)[0].superOptions, "rw");
}

TEST(MountInfo, RejectsHostileInput) {
  const std::string bad[] = {
      "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 ext3 /dev/root rw",  // no '-'
      "36 35 98:0 /mnt1 /mnt/parent rw,noatime - ext3 /dev/root",            // truncated
      "36 35 98:0 /mnt1 /mnt/parent rw,noatime - ext3",
      "36 35 98:0 /mnt1 /mnt/parent rw,noatime -",
      "36 35 98:0 /mnt1 /mnt/parent",
      "36 35 98:0",
      "36",
      "36 35 98:0 /mnt1 /mnt/parent rw - ext3 /dev/root rw extra",
      "x 35 98:0 / / rw - ext3 /dev/root rw",
      "-36 35 98:0 / / rw - ext3 /dev/root rw",
      "36 99999999999999999999 98:0 / / rw - ext3 /dev/root rw",
      "36 35 98 / / rw - ext3 /dev/root rw",
      "36 35 98:0  / rw - ext3 /dev/root rw",    // empty root
      "36 35 98:0 / / rw  - ext3 /dev/root rw",  // empty optional field
      "36 35 98:0 / / rw -  /dev/root rw",       // empty fstype
      "36 35 98:0 / /a\\000b rw - ext3 /dev/root rw",
      "36  35 98:0 / / rw - ext3 /dev/root rw",
      std::string("36 35 98:0 / /\0 rw - ext3 /dev/root rw", 38),
  };
  for (const auto& b : bad) {
    auto r = parseMountInfo(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("mountinfo: line ", 0), 0u) << r.error().message;
    }
  }
}

TEST(MountInfo, ErrorNamesLine) {
  auto r = parseMountInfo("1 0 0:1 / / rw - tmpfs tmpfs rw\n2 1 0:2 / /x rw tmpfs tmpfs rw\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("separator"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace cxiosync
