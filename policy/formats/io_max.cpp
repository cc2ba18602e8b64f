// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/io_max.h"

#include "policy/formats/text_util.h"

namespace cxiosync {

namespace {
constexpr std::string_view kWhat = "io.max";

std::optional<uint64_t>* slotFor(IoLimits& l, std::string_view key) {
  if (key == "rbps") return &l.rbps;
  if (key == "wbps") return &l.wbps;
  if (key == "riops") return &l.riops;
  if (key == "wiops") return &l.wiops;
  return nullptr;
}

// A key a later kernel may add: what blk-throttle's own keys look like.
bool plausibleKey(std::string_view key) {
  if (key.empty() || key.size() > 32) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

void appendKey(std::string& out, std::string_view key, const std::optional<uint64_t>& v) {
  if (!v) return;
  out += ' ';
  out += key;
  out += '=';
  if (*v == kUnlimited) {
    out += "max";
  } else {
    out += std::to_string(*v);
  }
}
}  // namespace

Result<std::vector<IoMaxEntry>> parseIoMax(std::string_view text) {
  if (auto e = detail::checkNoNul(kWhat, text)) return *e;
  std::vector<IoMaxEntry> out;
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
    IoMaxEntry entry{*dev, {}};
    while (detail::nextField(rest, field)) {
      auto eq = field.find('=');
      if (eq == std::string_view::npos) {
        return detail::lineError(kWhat, n, "expected key=value", field);
      }
      std::string_view key = field.substr(0, eq);
      std::string_view val = field.substr(eq + 1);
      auto* slot = slotFor(entry.limits, key);
      if (slot == nullptr) {
        if (!plausibleKey(key) || val.empty()) {
          return detail::lineError(kWhat, n, "expected key=value", field);
        }
        for (const auto& [k, v] : entry.otherKeys) {
          if (k == key) return detail::lineError(kWhat, n, "duplicate key", key);
        }
        entry.otherKeys.emplace_back(key, val);
        continue;
      }
      if (slot->has_value()) return detail::lineError(kWhat, n, "duplicate key", key);
      if (val == "max") {
        *slot = kUnlimited;
      } else if (auto v = detail::parseU64(val)) {
        *slot = *v;
      } else {
        return detail::lineError(kWhat, n,
                                 "invalid value for '" + std::string(key) +
                                     "' (expected 'max' or an unsigned number up to 2^64-1)",
                                 val);
      }
    }
    out.push_back(entry);
  }
  if (auto e = detail::checkDuplicateDevs(kWhat, devs)) return *e;
  return out;
}

std::string formatIoMaxLine(const IoMaxEntry& entry) {
  std::string out = entry.dev.str();
  appendKey(out, "rbps", entry.limits.rbps);
  appendKey(out, "wbps", entry.limits.wbps);
  appendKey(out, "riops", entry.limits.riops);
  appendKey(out, "wiops", entry.limits.wiops);
  return out;
}

}  // namespace cxiosync
