// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/bytes_text.h"

#include <gtest/gtest.h>

#include <random>

namespace cxiosync {
namespace {

TEST(BytesText, Utf8AndSystemdEscapesPassThrough) {
  EXPECT_EQ(textFromBytes("/system.slice/system-systemd\\x2dfsck.slice"),
            "/system.slice/system-systemd\\x2dfsck.slice");
  EXPECT_EQ(textFromBytes("/caf\xc3\xa9"), "/caf\xc3\xa9");
  EXPECT_EQ(bytesFromText("/system-systemd\\x2dfsck.slice"), "/system-systemd\\x2dfsck.slice");
}

TEST(BytesText, InvalidBytesBecomeHexEscapes) {
  EXPECT_EQ(textFromBytes("/\xff"), "/\\xff");
  EXPECT_EQ(textFromBytes("a\xc3"), "a\\xc3");                  // truncated sequence
  EXPECT_EQ(textFromBytes("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(textFromBytes("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // surrogate
  EXPECT_EQ(bytesFromText("/\\xff"), "/\xff");
  EXPECT_EQ(bytesFromText("/\\xFF"), "/\xff");
}

TEST(BytesText, LiteralBackslashThatWouldDecodeIsEscaped) {
  EXPECT_EQ(textFromBytes("\\xff"), "\\x5cxff");
  EXPECT_EQ(textFromBytes("\\x5c"), "\\x5cx5c");
  EXPECT_EQ(bytesFromText("\\x5cxff"), "\\xff");
  EXPECT_EQ(bytesFromText("\\x41\\"), "\\x41\\");  // not an escape: stays literal
}

TEST(BytesText, RoundTripsRandomBytes) {
  std::mt19937 rng(20261130);
  const char alphabet[] = {'\\', 'x',    '5',    'c',    'f',    'F',    '8',    '0',    'a',
                           '/',  '\xff', '\xc3', '\xa9', '\x80', '\xe2', '\x82', '\xac', '\0'};
  for (int n = 0; n < 20000; ++n) {
    std::string b(rng() % 12, '\0');
    for (auto& c : b) c = alphabet[rng() % sizeof(alphabet)];
    const std::string t = textFromBytes(b);
    for (size_t i = 0; i < t.size(); i += utf8SequenceLength(t, i))
      ASSERT_NE(utf8SequenceLength(t, i), 0u) << "not UTF-8 for input #" << n;
    ASSERT_EQ(bytesFromText(t), b) << "input #" << n;
  }
}

TEST(BytesText, PrefixNeverCutsACharacter) {
  const std::string e = "\xc3\xa9";
  EXPECT_EQ(utf8Prefix("k" + e + e, 2), "k");
  EXPECT_EQ(utf8Prefix("k" + e + e, 3), "k" + e);
  EXPECT_EQ(utf8Prefix("abc", 10), "abc");
}

}  // namespace
}  // namespace cxiosync
