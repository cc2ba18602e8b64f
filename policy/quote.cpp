#include "policy/quote.h"

namespace cxiosync {

std::string quoteForMessage(std::string_view text) {
  constexpr size_t kShown = 64;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kShown; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kShown) out += "...";
  out += "'";
  return out;
}

}  // namespace cxiosync
