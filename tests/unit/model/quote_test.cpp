// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/quote.h"

#include <gtest/gtest.h>

#include "policy/bytes_text.h"

namespace cxiosync {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

bool validUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Issue 16, bug B: both inputs were cut at byte 64, inside an 'é'; the error reply could not
// be encoded and the caller waited 25 s.
TEST(QuoteForMessage, CutNeverSplitsACharacter) {
  const std::string e = "\xc3\xa9";
  const std::string path = "/" + repeat(e, 40) + "/..";
  const std::string q = quoteForMessage(path);
  EXPECT_TRUE(validUtf8(q)) << q;
  EXPECT_EQ(q, "'/" + repeat(e, 31) + "...'");  // 1 + 62 bytes; the next 'é' would make 65

  const std::string key = std::string(63, 'k') + e;
  EXPECT_EQ(quoteForMessage(key), "'" + std::string(63, 'k') + "...'");
  EXPECT_EQ(quoteForMessage(std::string(62, 'k') + e), "'" + std::string(62, 'k') + e + "'");
}

TEST(QuoteForMessage, ControlBytesEscapedOtherBytesLeftForTheBoundary) {
  EXPECT_EQ(quoteForMessage("a\nb\x7f"), "'a\\x0ab\\x7f'");
  // Not UTF-8: still bytes here (cut byte by byte); the boundary's textFromBytes makes text of
  // the whole message once, so a name reads the same in a message as in a reply.
  EXPECT_EQ(quoteForMessage("/\xff"), "'/\xff'");
  EXPECT_EQ(textFromBytes(quoteForMessage("/\xff")), "'/\\xff'");
  EXPECT_EQ(quoteForMessage(std::string(70, '\xff')), "'" + std::string(64, '\xff') + "...'");
  EXPECT_EQ(quoteForMessage(std::string(64, 'a')), "'" + std::string(64, 'a') + "'");
}

}  // namespace
}  // namespace cxiosync
