#pragma once
// cgroup v2 `memory.stat`: "key value" lines, values in bytes (or counts).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "policy/result.h"

namespace cxiosync {

struct MemoryStat {
  std::map<std::string, uint64_t, std::less<>> values;
  uint64_t fileDirty() const;      // "file_dirty", 0 when absent
  uint64_t fileWriteback() const;  // "file_writeback", 0 when absent
};

Result<MemoryStat> parseMemoryStat(std::string_view text);

}  // namespace cxiosync
