// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/memory_stat.h"

#include "policy/formats/text_util.h"

namespace cxiosync {

namespace {
constexpr std::string_view kWhat = "memory.stat";

uint64_t valueOr0(const MemoryStat& s, std::string_view key) {
  auto it = s.values.find(key);
  return it == s.values.end() ? 0 : it->second;
}
}  // namespace

uint64_t MemoryStat::fileDirty() const {
  return valueOr0(*this, "file_dirty");
}
uint64_t MemoryStat::fileWriteback() const {
  return valueOr0(*this, "file_writeback");
}

Result<MemoryStat> parseMemoryStat(std::string_view text) {
  if (auto e = detail::checkNoNul(kWhat, text)) return *e;
  MemoryStat out;
  detail::LineReader reader(text);
  std::string_view line;
  while (reader.next(line)) {
    const size_t n = reader.lineNo();
    std::string_view rest = line;
    std::string_view key;
    std::string_view val;
    std::string_view extra;
    if (!detail::nextField(rest, key)) continue;  // blank line
    if (!detail::nextField(rest, val)) {
      return detail::lineError(kWhat, n, "missing value for key", key);
    }
    if (detail::nextField(rest, extra)) {
      return detail::lineError(kWhat, n, "expected 'KEY VALUE', found extra fields", line);
    }
    auto v = detail::parseU64(val);
    if (!v) {
      return detail::lineError(
          kWhat, n,
          "invalid value for '" + std::string(key) + "' (expected an unsigned 64-bit number)", val);
    }
    if (!out.values.emplace(key, *v).second) {
      return detail::lineError(kWhat, n, "duplicate key", key);
    }
  }
  return out;
}

}  // namespace cxiosync
