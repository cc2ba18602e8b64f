// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/io_stat.h"

#include "policy/formats/text_util.h"

namespace cxiosync {

namespace {
constexpr std::string_view kWhat = "io.stat";

bool isStandardKey(std::string_view k) {
  return k == "rbytes" || k == "wbytes" || k == "rios" || k == "wios" || k == "dbytes" ||
         k == "dios";
}
}  // namespace

std::optional<uint64_t> IoStatEntry::get(std::string_view key) const {
  auto it = counters.find(key);
  if (it == counters.end()) return std::nullopt;
  return it->second;
}

Result<std::vector<IoStatEntry>> parseIoStat(std::string_view text) {
  if (auto e = detail::checkNoNul(kWhat, text)) return *e;
  std::vector<IoStatEntry> out;
  std::vector<std::pair<DevNum, size_t>> devs;
  detail::LineReader reader(text);
  std::string_view line;
  while (reader.next(line)) {
    const size_t n = reader.lineNo();
    std::string_view rest = line;
    std::string_view field;
    if (!detail::nextField(rest, field)) continue;  // blank line
    auto dev = parseDevNum(field);
    if (!dev) return detail::lineError(kWhat, n, dev.error().message);
    devs.emplace_back(*dev, n);
    IoStatEntry entry;
    entry.dev = *dev;
    while (detail::nextField(rest, field)) {
      auto eq = field.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return detail::lineError(kWhat, n, "expected key=value", field);
      }
      std::string_view key = field.substr(0, eq);
      std::string_view val = field.substr(eq + 1);
      bool fresh = entry.other.empty() || entry.other.count(key) == 0;
      if (auto v = detail::parseU64(val)) {
        fresh = fresh && entry.counters.emplace(key, *v).second;
      } else if (entry.counters.count(key) != 0) {
        fresh = false;
      } else if (isStandardKey(key)) {
        return detail::lineError(
            kWhat, n,
            "invalid value for '" + std::string(key) + "' (expected an unsigned 64-bit number)",
            val);
      } else {
        fresh = fresh && entry.other.emplace(key, val).second;
      }
      if (!fresh) return detail::lineError(kWhat, n, "duplicate key", key);
    }
    out.push_back(std::move(entry));
  }
  if (auto e = detail::checkDuplicateDevs(kWhat, devs)) return *e;
  return out;
}

}  // namespace cxiosync
