// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// A block device number as the kernel prints it in cgroup files: "MAJ:MIN".
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "policy/result.h"

namespace cxiosync {

struct DevNum {
  uint32_t major = 0;
  uint32_t minor = 0;
  auto operator<=>(const DevNum&) const = default;
  std::string str() const { return std::to_string(major) + ":" + std::to_string(minor); }
};

// Parses "8:0". Rejects signs, spaces, empty parts and values above 2^32-1.
Result<DevNum> parseDevNum(std::string_view text);

}  // namespace cxiosync
