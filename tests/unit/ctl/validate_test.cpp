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

// Issue 27: the bus takes the values a config file takes (policy/config/values.h), no
// stricter dialect: on the old code "Allow", "yes", "50MiB/s" and "10MB" were refused here.
TEST(Validate, BoostPermission) {
  EXPECT_EQ(*parseBoostPermission("allow"), BoostPermission::Allow);
  EXPECT_EQ(*parseBoostPermission("deny"), BoostPermission::Deny);
  EXPECT_EQ(*parseBoostPermission("Allow"), BoostPermission::Allow);
  EXPECT_EQ(*parseBoostPermission("yes"), BoostPermission::Allow);
  EXPECT_EQ(*parseBoostPermission("OFF"), BoostPermission::Deny);
  for (const char* bad : {"", "maybe", "allow\x01"}) {
    auto r = parseBoostPermission(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, EINVAL);
  }
  EXPECT_STREQ(boostPermissionName(BoostPermission::Deny), "deny");
}

TEST(Validate, Ceiling) {
  EXPECT_EQ(parseBoostCeiling("inherit")->kind, BoostCeiling::Kind::Inherit);
  EXPECT_EQ(parseBoostCeiling("max")->kind, BoostCeiling::Kind::Max);
  EXPECT_EQ(parseBoostCeiling("MAX")->kind, BoostCeiling::Kind::Max);
  struct Case {
    const char* text;
    uint64_t bytes;
  };
  for (const Case& c :
       std::initializer_list<Case>{{"1", 1},
                                   {"1048576", 1048576},
                                   {"10K", 10000},
                                   {"10Ki", 10240},
                                   {"10M", 10000000},
                                   {"10MB", 10000000},
                                   {"10 MB/s", 10000000},
                                   {"50MiB/s", 52428800},
                                   {"1Mi", 1048576},
                                   {"1.5M", 1500000},
                                   {"2Gi", 2147483648},
                                   {"1T", 1000000000000},
                                   {"18446744073709551614", 18446744073709551614u}}) {
    auto b = parseBoostCeiling(c.text);
    ASSERT_TRUE(b) << c.text << ": " << b.error().message;
    EXPECT_EQ(b->kind, BoostCeiling::Kind::Bytes) << c.text;
    EXPECT_EQ(b->bytesPerSecond, c.bytes) << c.text;
    // The same text in a config file means the same number.
    EXPECT_EQ(*cxiosync::parseBoostCeiling(c.text), *b) << c.text;
  }
  EXPECT_EQ(formatBoostCeiling(*parseBoostCeiling("10Mi")), "10485760");
  EXPECT_EQ(formatBoostCeiling(*parseBoostCeiling("max")), "max");
  for (const char* bad : {"", "0", "0M", "-1", "+1", "M", "1X", "1Mib/x", "unlimited",
                          "18446744073709551615", "18446744073709551616", "99999999T", "0x10"}) {
    auto r = parseBoostCeiling(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_EQ(r.error().code, EINVAL);
    }
  }
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
