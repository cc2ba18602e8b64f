// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// cgroup v2 `io.max` (block/blk-throttle.c: tg_prfill_max):
//   "MAJ:MIN rbps=V wbps=V riops=V wiops=V\n", `max` = unlimited; only limited devices listed.
// On write, any subset of keys may be given; absent keys are left unchanged by the kernel.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/model/dev_num.h"
#include "policy/result.h"

namespace cxiosync {

inline constexpr uint64_t kUnlimited = UINT64_MAX;  // the kernel's "max"

struct IoLimits {
  // nullopt: key absent (on write: leave as is). kUnlimited: "max".
  std::optional<uint64_t> rbps, wbps, riops, wiops;
  bool operator==(const IoLimits&) const = default;
};

struct IoMaxEntry {
  DevNum dev;
  IoLimits limits;
  // Keys a later kernel may add ("key=value", as read, in file order). Kept so that they can
  // be shown and compared, never written: a write names only the keys it changes
  // (formatIoMaxLine), and the kernel leaves the others — these included — as they are.
  std::vector<std::pair<std::string, std::string>> otherKeys = {};
  bool operator==(const IoMaxEntry&) const = default;
};

// Parses the whole file. A line may carry any subset of the four keys (even none: all
// nullopt). A key other than those four (a future kernel's: lower-case letters, digits and
// '_', with a non-empty value) is kept in otherKeys rather than failing the parse: one new
// key must not make every restore fail and hide every limit (issue 16, L1). A repeated key or
// device line, a value of a known key that is neither `max` nor an unsigned 64-bit decimal, a
// field that is not key=value, or a malformed MAJ:MIN is an error naming the line. A numeric
// 18446744073709551615 reads as kUnlimited, like `max`. Blank lines are skipped; an empty
// file means no limits.
Result<std::vector<IoMaxEntry>> parseIoMax(std::string_view text);

// "8:0 rbps=max wbps=1048576" — only the present known keys, in kernel order (never
// otherKeys: this is the line written). No trailing newline.
std::string formatIoMaxLine(const IoMaxEntry& entry);

}  // namespace cxiosync
