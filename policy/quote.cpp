// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/quote.h"

#include "policy/bytes_text.h"

namespace cxiosync {

std::string quoteForMessage(std::string_view text) {
  constexpr size_t kShown = 64;
  const std::string_view shown = utf8Prefix(text, kShown);
  std::string out = "'";
  for (char ch : shown) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown.size() < text.size()) out += "...";
  out += "'";
  return out;
}

}  // namespace cxiosync
