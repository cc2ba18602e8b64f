// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/validate.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace cxiosync::dbus {
namespace {

TEST(Validate, CgroupArg) {
  EXPECT_EQ(parseCgroupArg("/")->display(), "/");
  EXPECT_EQ(parseCgroupArg("a/b")->display(), "/a/b");
  for (std::string bad : {std::string(""), std::string(".."), std::string("/a/.."),
                          std::string("/./x"), std::string("/a\x7f"), std::string("/a\0b", 4),
                          std::string(5000, 'a'), "/" + std::string(256, 'n')}) {
    auto r = parseCgroupArg(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, EINVAL);
    EXPECT_FALSE(r.error().message.empty());
  }
}

// The escaped form names the cgroup whose name is not UTF-8 (policy/bytes_text.h).
TEST(Validate, CgroupTextDecodesTheEscape) {
  EXPECT_EQ(parseCgroupText("/\\xff")->relative(), "\xff");
  EXPECT_EQ(parseCgroupText("/a/\\xFE\\x5cxff")->relative(), "a/\xfe\\xff");
  EXPECT_EQ(parseCgroupText("/system-systemd\\x2dfsck.slice")->relative(),
            "system-systemd\\x2dfsck.slice")
      << "systemd's own escapes are plain text in a cgroup name";
  EXPECT_EQ(parseCgroupText("/caf\xc3\xa9")->relative(), "caf\xc3\xa9");
  // Decoding makes no separator, dot or control byte: what was refused stays refused.
  for (std::string bad : {std::string(""), std::string("/a/.."), std::string("/\\x2e\\x2e/.."),
                          std::string("/a\x01"), "/" + std::string(256, 'n')}) {
    auto r = parseCgroupText(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, EINVAL);
  }
  // A name of 255 bytes that are not UTF-8 is 1020 characters as text: measured as bytes.
  std::string text = "/";
  for (int i = 0; i < 255; ++i) text += "\\xff";
  EXPECT_EQ(parseCgroupText(text)->relative(), std::string(255, '\xff'));
}

TEST(Validate, BoostPermission) {
  EXPECT_EQ(*parseBoostPermission("allow"), BoostPermission::Allow);
  EXPECT_EQ(*parseBoostPermission("deny"), BoostPermission::Deny);
  EXPECT_FALSE(parseBoostPermission("Allow"));
  EXPECT_FALSE(parseBoostPermission(""));
  EXPECT_STREQ(boostPermissionName(BoostPermission::Deny), "deny");
}

TEST(Validate, Bandwidth) {
  EXPECT_EQ(*parseBandwidth("1"), 1u);
  EXPECT_EQ(*parseBandwidth("1048576"), 1048576u);
  EXPECT_EQ(*parseBandwidth("10K"), 10000u);
  EXPECT_EQ(*parseBandwidth("10Ki"), 10240u);
  EXPECT_EQ(*parseBandwidth("1M"), 1000000u);
  EXPECT_EQ(*parseBandwidth("1Mi"), 1048576u);
  EXPECT_EQ(*parseBandwidth("2Gi"), 2147483648u);
  EXPECT_EQ(*parseBandwidth("1T"), 1000000000000u);
  EXPECT_EQ(*parseBandwidth("18446744073709551614"), 18446744073709551614u);
  for (const char* bad : {"", "0", "0M", "-1", "+1", "1.5M", "1 M", "1MB", "1Mib", "M", "1X",
                          "18446744073709551615", "18446744073709551616", "99999999T", " 1"}) {
    auto r = parseBandwidth(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_EQ(r.error().code, EINVAL);
    }
  }
}

TEST(Validate, Ceiling) {
  EXPECT_EQ(parseBoostCeiling("inherit")->kind, BoostCeiling::Kind::Inherit);
  EXPECT_EQ(parseBoostCeiling("max")->kind, BoostCeiling::Kind::Max);
  auto b = parseBoostCeiling("10Mi");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, BoostCeiling::Kind::Bytes);
  EXPECT_EQ(b->bytesPerSecond, 10485760u);
  EXPECT_EQ(formatBoostCeiling(*b), "10485760");
  EXPECT_EQ(formatBoostCeiling(*parseBoostCeiling("max")), "max");
  EXPECT_FALSE(parseBoostCeiling("MAX"));
  EXPECT_FALSE(parseBoostCeiling("unlimited"));
}

TEST(Validate, Options) {
  auto none = parseMethodOptions({}, {}, true);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->runtime);
  EXPECT_FALSE(none->interactive);
  auto both = parseMethodOptions({{"runtime", "b"}, {"interactive", "b"}},
                                 {{"runtime", true}, {"interactive", true}}, true);
  ASSERT_TRUE(both);
  EXPECT_TRUE(both->runtime);
  EXPECT_TRUE(both->interactive);
  EXPECT_FALSE(parseMethodOptions({{"runtime", "b"}}, {{"runtime", true}}, false))
      << "runtime where the method does not take it";
  EXPECT_FALSE(parseMethodOptions({{"runtime", "s"}}, {}, true)) << "wrong type";
  EXPECT_FALSE(parseMethodOptions({{"force", "b"}}, {{"force", true}}, true)) << "unknown";
}

}  // namespace
}  // namespace cxiosync::dbus
