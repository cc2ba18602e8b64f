// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Internal helpers shared by the kernel text parsers in policy/formats/. Not a public API:
// include only from policy/formats/*.cpp (and their tests).
//
// Conventions every parser follows (documented once here):
//  - Lines are separated by '\n'; the last line may lack its newline. A single '\r' at the
//    end of a line is removed (a file checked out with CRLF); a '\r' anywhere else is an
//    ordinary byte and usually makes the line invalid.
//  - A NUL byte anywhere in the input is an error (the kernel never prints one).
//  - Numbers are parsed with std::from_chars: no sign, no leading '+', no whitespace, no
//    overflow (values above UINT64_MAX are errors, never wrapped or clamped).
//  - Error messages read "<what>: line N: <problem>: '<excerpt>'" with the excerpt
//    shortened and non-printable bytes shown as \xNN.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "policy/model/dev_num.h"
#include "policy/result.h"

namespace cxiosync::detail {

// A printable, bounded excerpt of untrusted text for error messages.
inline std::string excerpt(std::string_view s, size_t max = 80) {
  std::string out;
  size_t n = 0;
  for (char c : s) {
    if (n++ >= max) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  return out;
}

inline Error lineError(std::string_view what, size_t lineNo, std::string_view problem) {
  std::string m(what);
  m += ": line ";
  m += std::to_string(lineNo);
  m += ": ";
  m += problem;
  return makeError(std::move(m));
}

inline Error lineError(std::string_view what, size_t lineNo, std::string_view problem,
                       std::string_view text) {
  std::string p(problem);
  p += ": '";
  p += excerpt(text);
  p += "'";
  return lineError(what, lineNo, p);
}

// Error for a NUL byte, or nullopt when there is none. Names the line that holds it.
inline std::optional<Error> checkNoNul(std::string_view what, std::string_view text) {
  auto pos = text.find('\0');
  if (pos == std::string_view::npos) return std::nullopt;
  size_t line = 1;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') ++line;
  }
  return lineError(what, line, "NUL byte in input");
}

// Iterates over lines: `next` returns false at the end. Line numbers start at 1. A final
// empty segment after the last '\n' is not a line.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : rest_(text) {}
  bool next(std::string_view& line) {
    if (done_ || rest_.empty()) {
      done_ = true;
      return false;
    }
    auto nl = rest_.find('\n');
    if (nl == std::string_view::npos) {
      line = rest_;
      rest_ = {};
      done_ = true;
    } else {
      line = rest_.substr(0, nl);
      rest_.remove_prefix(nl + 1);
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++lineNo_;
    return true;
  }
  size_t lineNo() const { return lineNo_; }

 private:
  std::string_view rest_;
  size_t lineNo_ = 0;
  bool done_ = false;
};

inline bool isBlank(char c) {
  return c == ' ' || c == '\t';
}

inline std::string_view trimBlanks(std::string_view s) {
  while (!s.empty() && isBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && isBlank(s.back())) s.remove_suffix(1);
  return s;
}

// Splits off the next field separated by runs of spaces/tabs; false when none is left.
inline bool nextField(std::string_view& rest, std::string_view& field) {
  size_t i = 0;
  while (i < rest.size() && isBlank(rest[i])) ++i;
  if (i == rest.size()) {
    rest = {};
    return false;
  }
  size_t j = i;
  while (j < rest.size() && !isBlank(rest[j])) ++j;
  field = rest.substr(i, j - i);
  rest.remove_prefix(j);
  return true;
}

inline bool isDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Decimal, digits only (no sign, no spaces). nullopt on anything else or overflow.
inline std::optional<uint64_t> parseU64(std::string_view s) {
  if (!isDigits(s)) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Decimal with an optional leading '-'. nullopt on anything else or overflow.
inline std::optional<int64_t> parseI64(std::string_view s) {
  std::string_view digits = s;
  if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
  if (!isDigits(digits)) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Hexadecimal digits only (no prefix). nullopt on anything else or above UINT64_MAX.
inline std::optional<uint64_t> parseHexDigits(std::string_view s) {
  if (s.empty()) return std::nullopt;
  for (char c : s) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!ok) return std::nullopt;
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// "0x1f" (prefix required, as the kernel prints with %#llx / 0x%llx).
inline std::optional<uint64_t> parseHex0x(std::string_view s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  return parseHexDigits(s.substr(2));
}

// Two's-complement reinterpretation of a 64-bit register value (0xfffffffffffffffb -> -5).
inline int64_t asSigned(uint64_t v) {
  return static_cast<int64_t>(v);
}

// Duplicate device lines, found after parsing with one sort instead of a node per line.
// `devs` holds (device, line number); returns the error for the second occurrence of the
// first duplicated device (in line order), or nullopt.
inline std::optional<Error> checkDuplicateDevs(std::string_view what,
                                               std::vector<std::pair<DevNum, size_t>>& devs) {
  std::sort(devs.begin(), devs.end());
  const std::pair<DevNum, size_t>* worst = nullptr;
  for (size_t i = 1; i < devs.size(); ++i) {
    if (devs[i].first == devs[i - 1].first &&
        (worst == nullptr || devs[i].second < worst->second)) {
      worst = &devs[i];
    }
  }
  if (worst == nullptr) return std::nullopt;
  return lineError(what, worst->second, "duplicate device " + worst->first.str());
}

}  // namespace cxiosync::detail
