#include "policy/json.h"

#include <cstdint>

namespace cxiosync {

void appendJsonString(std::string& out, std::string_view s, JsonBytes bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + s.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
      ++i;
      continue;
    }
    if (c < 0x80 || bytes == JsonBytes::Raw) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    size_t n = utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  out.push_back('"');
}

std::string jsonQuote(std::string_view s, JsonBytes bytes) {
  std::string out;
  appendJsonString(out, s, bytes);
  return out;
}

}  // namespace cxiosync
