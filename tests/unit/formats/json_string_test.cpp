// SPDX-License-Identifier: GPL-2.0-or-later
// policy/json.h: nlohmann-json helpers (dump that never throws, tolerant typed reads).
#include "policy/json.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

// A second, independent statement of UTF-8 validity (by lead-byte ranges, Unicode 15 table
// 3-7), to check utf8SequenceLength against.
size_t referenceLength(const std::string& s) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
    return k < s.size() && b(k) >= lo && b(k) <= hi;
  };
  unsigned c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

TEST(Json, DumpNeverThrowsAndBytesRoundTrip) {
  // A byte string that skipped jsonBytes: U+FFFD, not an exception.
  EXPECT_EQ(jsonDump(Json{{"k", std::string("a\xff")}}), "{\"k\":\"a\xef\xbf\xbd\"}");
  EXPECT_EQ(jsonDump(Json{{"k", jsonBytes("a\xff\\x41")}}), R"({"k":"a\\xff\\x41"})");
  EXPECT_EQ(jsonDump(Json{{"b", 1}, {"a", 2}}), R"({"b":1,"a":2})") << "insertion order";
  EXPECT_EQ(jsonDump(Json{{"a", Json::array()}, {"o", Json::object()}}, 2),
            "{\n  \"a\": [],\n  \"o\": {}\n}");
}

TEST(Json, ParseErrorsAreValues) {
  EXPECT_FALSE(jsonParse(""));
  EXPECT_FALSE(jsonParse("{\"a\":"));
  EXPECT_FALSE(jsonParse("\"\xff\""));  // not UTF-8
  EXPECT_FALSE(jsonParse("[1] x"));
  EXPECT_TRUE(jsonParse(" {\"a\":[1,2,{}]} \n"));
  EXPECT_FALSE(jsonParse(std::string(100000, '[')));
}

TEST(Json, FieldsReadByTypeAndRange) {
  auto j = jsonParse(R"({"i":-3,"u":4294967296,"b":true,"s":"x\\xffy","f":1.5,"n":null})");
  ASSERT_TRUE(j);
  int i = 0;
  int64_t big = 0;
  uint32_t small = 9;
  bool b = false;
  std::string s, t;
  JsonFields f(*j);
  f.num("i", i).num("u", big).flag("b", b).bytes("s", s).text("s", t).num("missing", small);
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(i, -3);
  EXPECT_EQ(big, 4294967296);
  EXPECT_TRUE(b);
  EXPECT_EQ(s, "x\xffy");
  EXPECT_EQ(t, "x\\xffy");
  EXPECT_EQ(small, 9u) << "missing keys leave the field";
  EXPECT_FALSE(JsonFields(*j).num("u", small).ok()) << "out of range";
  EXPECT_FALSE(JsonFields(*j).num("i", small).ok()) << "negative";
  EXPECT_FALSE(JsonFields(*j).num("f", i).ok()) << "fraction";
  EXPECT_FALSE(JsonFields(*j).flag("n", b).ok());
  EXPECT_FALSE(JsonFields(*j).text("i", s).ok());
  EXPECT_FALSE(JsonFields(*j).require("nope").ok());
  EXPECT_FALSE(JsonFields(Json::array()).ok());
  EXPECT_EQ(jsonUint(*j, "i"), std::nullopt);
  EXPECT_EQ(jsonInt(*j, "u"), 4294967296);
}

// Every byte, alone and before and after text: the Utf8 output is valid UTF-8 with no raw
// control bytes, and unescaping the simple escapes gives the input back for valid input.
TEST(JsonString, Utf8SequenceLengthAgreesWithTheUnicodeTable) {
  auto len = [](const std::string& s) { return utf8SequenceLength(s, 0); };
  // Every one- and two-byte string, every three-byte string with a multi-byte lead.
  for (int a = 0; a < 256; ++a) {
    std::string one(1, static_cast<char>(a));
    ASSERT_EQ(len(one), referenceLength(one)) << a;
    for (int b = 0; b < 256; ++b) {
      std::string two = one + static_cast<char>(b);
      ASSERT_EQ(len(two), referenceLength(two)) << a << " " << b;
    }
  }
  for (int a = 0xc0; a < 0x100; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (int c = 0; c < 256; c += (c >= 0x7e && c <= 0xc0) ? 1 : 13) {
        std::string three{static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)};
        ASSERT_EQ(len(three), referenceLength(three)) << a << " " << b << " " << c;
        for (int d : {0x41, 0x80, 0xbf, 0xc0}) {
          std::string four = three + static_cast<char>(d);
          ASSERT_EQ(len(four), referenceLength(four)) << a << " " << b << " " << c << " " << d;
        }
      }
    }
  }
  // Not at the start.
  EXPECT_EQ(utf8SequenceLength("ab\xc3\xa9", 2), 2u);
  EXPECT_EQ(utf8SequenceLength("ab\xc3", 2), 0u);
}

}  // namespace
}  // namespace cxiosync
