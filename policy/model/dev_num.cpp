// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/model/dev_num.h"

#include <charconv>

namespace cxiosync {

namespace {
Result<uint32_t> parseU32(std::string_view s, std::string_view whole) {
  uint32_t v = 0;
  if (s.empty() || s.front() == '+' || s.front() == '-') {
    return makeError("invalid device number '" + std::string(whole) + "'");
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return makeError("invalid device number '" + std::string(whole) + "'");
  }
  return v;
}
}  // namespace

Result<DevNum> parseDevNum(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    return makeError("invalid device number '" + std::string(text) + "': expected MAJ:MIN");
  }
  auto major = parseU32(text.substr(0, colon), text);
  if (!major) return major.error();
  auto minor = parseU32(text.substr(colon + 1), text);
  if (!minor) return minor.error();
  return DevNum{*major, *minor};
}

}  // namespace cxiosync
