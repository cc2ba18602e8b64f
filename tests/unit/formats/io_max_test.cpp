// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/io_max.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

TEST(IoMax, ParsesKernelLine) {
  auto r = parseIoMax("254:0 rbps=max wbps=1048576 riops=max wiops=max\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  const auto& e = (*r)[0];
  EXPECT_EQ(e.dev, (DevNum{254, 0}));
  EXPECT_EQ(e.limits.rbps, kUnlimited);
  EXPECT_EQ(e.limits.wbps, 1048576u);
  EXPECT_EQ(e.limits.riops, kUnlimited);
  EXPECT_EQ(e.limits.wiops, kUnlimited);
}

TEST(IoMax, ParsesSeveralDevices) {
  auto r = parseIoMax(
      "8:0 rbps=max wbps=max riops=100 wiops=max\n"
      "8:16 rbps=2097152 wbps=max riops=max wiops=50\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].limits.riops, 100u);
  EXPECT_EQ((*r)[1].dev, (DevNum{8, 16}));
  EXPECT_EQ((*r)[1].limits.rbps, 2097152u);
  EXPECT_EQ((*r)[1].limits.wiops, 50u);
}

TEST(IoMax, EmptyFileMeansNoLimits) {
  auto r = parseIoMax("");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  auto blank = parseIoMax("\n\n");
  ASSERT_TRUE(blank.ok());
  EXPECT_TRUE(blank->empty());
}

TEST(IoMax, AcceptsSubsetOfKeysInAnyOrder) {
  auto r = parseIoMax("8:0 wiops=10 wbps=max");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& l = (*r)[0].limits;
  EXPECT_FALSE(l.rbps.has_value());
  EXPECT_EQ(l.wbps, kUnlimited);
  EXPECT_FALSE(l.riops.has_value());
  EXPECT_EQ(l.wiops, 10u);
}

TEST(IoMax, AcceptsDeviceWithNoKeys) {
  auto r = parseIoMax("8:0\n8:1 \n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].limits, IoLimits{});
}

TEST(IoMax, MissingTrailingNewlineAndCrlf) {
  auto r = parseIoMax("8:0 wbps=5\r\n8:1 wbps=6");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].limits.wbps, 5u);
  EXPECT_EQ((*r)[1].limits.wbps, 6u);
}

TEST(IoMax, BoundaryValues) {
  auto r = parseIoMax("8:0 rbps=0 wbps=18446744073709551614 riops=18446744073709551615");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].limits.rbps, 0u);
  EXPECT_EQ((*r)[0].limits.wbps, 18446744073709551614u);
  EXPECT_EQ((*r)[0].limits.riops, kUnlimited);  // numeric UINT64_MAX == max
}

TEST(IoMax, RejectsHostileInput) {
  const std::string bad[] = {
      "8:0 wbps=18446744073709551616",  // overflow
      "8:0 wbps=99999999999999999999999999999",
      "8:0 wbps=-1",                    // negative
      "8:0 wbps=+1",                    // sign
      "8:0 wbps=",                      // empty value
      "8:0 wbps=1k",                    // suffix
      "8:0 wbps=0x10",                  // hex
      "8:0 wbps=MAX",                   // case
      "8:0 wbps",                       // no '='
      "8:0 =5",                         // no key
      "8:0 Latency=5",                  // not a kernel-style key
      "8:0 lat-ency=5",                 // not a kernel-style key
      "8:0 latency=",                   // no value
      "8:0 latency=1 latency=2",        // duplicate unknown key
      "8:0 wbps=1 wbps=2",              // duplicate key
      "8:0 wbps=1\n8:0 rbps=2",         // duplicate device
      "8 wbps=1",                       // bad dev
      "8:0:0 wbps=1",                   // bad dev
      "sda wbps=1",                     // bad dev
      "-8:0 wbps=1",                    // negative dev
      "4294967296:0 wbps=1",            // dev overflow
      std::string("8:0 wbps=1\0", 11),  // NUL
      std::string("8:0 wb\0ps=1", 11),  // NUL
      "8:0 wbps=1\r5",                  // stray CR
      "\xff\xfe garbage",
  };
  for (const auto& b : bad) {
    auto r = parseIoMax(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("io.max: line "), std::string::npos) << r.error().message;
      EXPECT_EQ(r.error().code, 0);
    }
  }
}

// Issue 16, L1: a key from a later kernel failed the whole parse, so every restore of that
// cgroup failed forever and its limits vanished from the snapshot. It is kept, never written.
TEST(IoMax, KeysOfALaterKernelAreKeptNotFatal) {
  auto r = parseIoMax(
      "8:0 rbps=max wbps=1048576 riops=max wiops=max latency=5 bps_burst=max\n"
      "8:16 wbps=7\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  const auto& e = (*r)[0];
  EXPECT_EQ(e.limits.wbps, 1048576u);
  EXPECT_EQ(e.limits.rbps, kUnlimited);
  using KV = std::pair<std::string, std::string>;
  EXPECT_EQ(e.otherKeys, (std::vector<KV>{{"latency", "5"}, {"bps_burst", "max"}}));
  EXPECT_TRUE((*r)[1].otherKeys.empty());
  // The line written names only the known keys present (a restore's patch): the kernel keeps
  // the others as they are.
  IoMaxEntry patch = e;
  patch.limits = IoLimits{std::nullopt, 1048576, std::nullopt, std::nullopt};
  EXPECT_EQ(formatIoMaxLine(patch), "8:0 wbps=1048576");
  EXPECT_NE(e, (IoMaxEntry{e.dev, e.limits})) << "they take part in comparisons";
}

TEST(IoMax, ErrorNamesLineAndProblem) {
  auto r = parseIoMax("8:0 wbps=1\n8:16 wbps=lots\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("wbps"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("lots"), std::string::npos) << r.error().message;
}

TEST(IoMax, ErrorExcerptIsPrintableAndBounded) {
  std::string huge = "8:0 wbps=" + std::string(100000, '9');
  auto r = parseIoMax(huge);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.error().message.size(), 300u);
  auto ctl = parseIoMax("8:0 wbps=\x01\x7f");
  ASSERT_FALSE(ctl.ok());
  EXPECT_NE(ctl.error().message.find("\\x01\\x7f"), std::string::npos) << ctl.error().message;
}

TEST(IoMax, FormatsOnlyPresentKeysInKernelOrder) {
  IoMaxEntry e{{254, 0}, {}};
  EXPECT_EQ(formatIoMaxLine(e), "254:0");
  e.limits.wiops = 7;
  e.limits.rbps = kUnlimited;
  EXPECT_EQ(formatIoMaxLine(e), "254:0 rbps=max wiops=7");
  e.limits.wbps = 1048576;
  e.limits.riops = 0;
  EXPECT_EQ(formatIoMaxLine(e), "254:0 rbps=max wbps=1048576 riops=0 wiops=7");
}

TEST(IoMax, FormatParseRoundTrip) {
  IoMaxEntry e{{8, 32}, {}};
  e.limits.wbps = 123456789012345ULL;
  e.limits.riops = kUnlimited;
  auto r = parseIoMax(formatIoMaxLine(e) + "\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0], e);
  auto kernel = std::string("254:0 rbps=max wbps=1048576 riops=max wiops=max");
  auto k = parseIoMax(kernel);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(formatIoMaxLine((*k)[0]), kernel);
}

}  // namespace
}  // namespace cxiosync
