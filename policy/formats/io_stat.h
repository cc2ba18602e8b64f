#pragma once
// cgroup v2 `io.stat`: "MAJ:MIN key=value ..." per device. Keys may be absent (a device
// line with no keys at all, e.g. "7:0 ") or extra (cost.*, io.latency keys): parsed
// generically, unknown keys kept.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/model/dev_num.h"
#include "policy/result.h"

namespace cxiosync {

struct IoStatEntry {
  DevNum dev;
  std::map<std::string, uint64_t, std::less<>> counters;  // rbytes, wbytes, rios, wios, dbytes, ...
  std::optional<uint64_t> get(std::string_view key) const;
};

Result<std::vector<IoStatEntry>> parseIoStat(std::string_view text);

}  // namespace cxiosync
