// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/bytes_text.h"

#include <cstdint>

namespace cxiosync {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte a "\xNN" at s[i] stands for, or -1 when s[i] starts no escape that decodes
// (see the header: only NN >= 0x80 and NN == 0x5c are escapes).
int escapedByteAt(std::string_view s, size_t i) {
  if (i + 3 >= s.size() || s[i] != '\\' || s[i + 1] != 'x') return -1;
  int hi = hexValue(s[i + 2]), lo = hexValue(s[i + 3]);
  if (hi < 0 || lo < 0) return -1;
  int b = hi * 16 + lo;
  return (b >= 0x80 || b == 0x5c) ? b : -1;
}

void appendEscape(std::string& out, unsigned char b) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out.push_back(kHex[b >> 4]);
  out.push_back(kHex[b & 0xf]);
}

}  // namespace

size_t utf8SequenceLength(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;  // a continuation byte, or 0xf8..0xff
  }
  if (n > s.size() - i) return 0;
  for (size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
  if (cp >= 0xd800 && cp <= 0xdfff) return 0;
  if (cp > 0x10ffff) return 0;
  return n;
}

std::string textFromBytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    if (escapedByteAt(bytes, i) >= 0) {  // a literal backslash that would decode
      appendEscape(out, '\\');
      ++i;
      continue;
    }
    size_t n = utf8SequenceLength(bytes, i);
    if (n == 0) {
      appendEscape(out, static_cast<unsigned char>(bytes[i]));
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string bytesFromText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    int b = escapedByteAt(text, i);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
      i += 4;
    } else {
      out.push_back(text[i]);
      ++i;
    }
  }
  return out;
}

std::string_view utf8Prefix(std::string_view s, size_t maxBytes) {
  size_t end = 0;
  while (end < s.size()) {
    size_t n = utf8SequenceLength(s, end);
    if (n == 0) n = 1;  // not UTF-8: cut anywhere, byte by byte
    if (end + n > maxBytes) break;
    end += n;
  }
  return s.substr(0, end);
}

}  // namespace cxiosync
