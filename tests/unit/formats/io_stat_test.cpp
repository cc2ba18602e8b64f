// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/io_stat.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

TEST(IoStat, ParsesKernelLines) {
  auto r = parseIoStat(
      "254:0 rbytes=1597440 wbytes=8388608 rios=69 wios=2 dbytes=0 dios=0\n"
      "7:0 \n"
      "11:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].dev, (DevNum{254, 0}));
  EXPECT_EQ((*r)[0].get("wbytes"), 8388608u);
  EXPECT_EQ((*r)[0].get("rios"), 69u);
  EXPECT_EQ((*r)[0].counters.size(), 6u);
  EXPECT_EQ((*r)[1].dev, (DevNum{7, 0}));
  EXPECT_TRUE((*r)[1].counters.empty());
  EXPECT_TRUE((*r)[1].other.empty());
  EXPECT_FALSE((*r)[1].get("wbytes").has_value());
  EXPECT_EQ((*r)[2].get("rbytes"), 4096u);
}

TEST(IoStat, DeviceLineWithoutTrailingSpace) {
  auto r = parseIoStat("7:0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_TRUE((*r)[0].counters.empty());
}

TEST(IoStat, KeepsIocostAndIolatencyKeys) {
  auto r = parseIoStat(
      "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=5 dios=6 cost.vrate=100.00 cost.usage=17 "
      "cost.wait=0 cost.indebt=0 cost.indelay=0 depth=max avg_lat=120 win=250 use_delay=-1 "
      "delay_nsec=0\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& e = (*r)[0];
  EXPECT_EQ(e.get("dios"), 6u);
  EXPECT_EQ(e.get("cost.usage"), 17u);
  EXPECT_EQ(e.get("avg_lat"), 120u);
  EXPECT_FALSE(e.get("cost.vrate").has_value());
  EXPECT_EQ(e.other.at("cost.vrate"), "100.00");
  EXPECT_EQ(e.other.at("depth"), "max");
  EXPECT_EQ(e.other.at("use_delay"), "-1");
}

TEST(IoStat, UnknownKeysWithOddValuesAreNeverFatal) {
  auto r = parseIoStat("8:0 future= weird=99999999999999999999999 x.y=a=b");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& e = (*r)[0];
  EXPECT_EQ(e.other.at("future"), "");
  EXPECT_EQ(e.other.at("weird"), "99999999999999999999999");
  EXPECT_EQ(e.other.at("x.y"), "a=b");
}

TEST(IoStat, EmptyAndBlank) {
  auto r = parseIoStat("");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  auto b = parseIoStat("\n \n\t\n");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->empty());
}

TEST(IoStat, MaxValues) {
  auto r = parseIoStat("8:0 rbytes=18446744073709551615 wbytes=0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].get("rbytes"), UINT64_MAX);
}

TEST(IoStat, RejectsHostileInput) {
  const std::string bad[] = {
      "8:0 rbytes=18446744073709551616",  // overflow in a standard key
      "8:0 wbytes=-1",
      "8:0 wbytes=1.5",
      "8:0 rios=",
      "8:0 dios=max",
      "8:0 rbytes",  // no '='
      "8:0 =5",      // no key
      "8:0 rbytes=1 rbytes=1",
      "8:0 x=a x=1",  // duplicate, once text once number
      "8:0 rbytes=1\n8:0 wbytes=1",
      "rbytes=1",
      "8:0rbytes=1",
      "8:x rbytes=1",
      std::string("8:0 rbytes=1\n\0", 14),
      "8:0 rbytes=1\r\r",
  };
  for (const auto& b : bad) {
    auto r = parseIoStat(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("io.stat: line ", 0), 0u) << r.error().message;
    }
  }
}

TEST(IoStat, ErrorNamesLine) {
  auto r = parseIoStat("8:0 rbytes=1\n8:16 \n8:32 wbytes=nope\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("line 3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("wbytes"), std::string::npos) << r.error().message;
}

TEST(IoStat, TenThousandDevices) {
  std::string text;
  for (int i = 0; i < 10000; ++i) {
    text += "8:" + std::to_string(i) + " rbytes=" + std::to_string(i) +
            " wbytes=1 rios=2 wios=3 dbytes=0 dios=0\n";
  }
  auto r = parseIoStat(text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 10000u);
  EXPECT_EQ((*r)[9999].get("rbytes"), 9999u);
}

}  // namespace
}  // namespace cxiosync
