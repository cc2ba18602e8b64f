// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// cgroup v2 `memory.stat`: "key value" lines, values in bytes (or counts).
// Kernel 6.1 (mm/memcontrol.c: memory_stat_format) prints "%s %llu\n" for every key.
// Every line must be exactly "KEY VALUE" with VALUE an unsigned 64-bit decimal; anything else
// (missing value, extra fields, sign, overflow, duplicate key) is an error naming the line.
// Blank lines are skipped; an empty file is an empty map.
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
