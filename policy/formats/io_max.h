#pragma once
// cgroup v2 `io.max` (block/blk-throttle.c: tg_prfill_max):
//   "MAJ:MIN rbps=V wbps=V riops=V wiops=V\n", `max` = unlimited; only limited devices listed.
// On write, any subset of keys may be given; absent keys are left unchanged by the kernel.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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
  bool operator==(const IoMaxEntry&) const = default;
};

// Parses the whole file. Unknown keys are an error (io.max has exactly four keys). A line may
// carry any subset of the four keys (even none: all nullopt); a repeated key or device line,
// a value that is neither `max` nor an unsigned 64-bit decimal, or a malformed MAJ:MIN is an
// error naming the line. A numeric 18446744073709551615 reads as kUnlimited, like `max`.
// Blank lines are skipped; an empty file means no limits.
Result<std::vector<IoMaxEntry>> parseIoMax(std::string_view text);

// "8:0 rbps=max wbps=1048576" — only present keys, in kernel order. No trailing newline.
std::string formatIoMaxLine(const IoMaxEntry& entry);

}  // namespace cxiosync
