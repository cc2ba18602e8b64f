// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/validate.h"

#include "policy/bytes_text.h"
#include "policy/quote.h"

#include <cerrno>
#include <limits>

namespace cxiosync::dbus {

namespace {

Error invalid(std::string message) {
  return makeError(std::move(message), EINVAL);
}

}  // namespace

Result<CgroupPath> parseCgroupArg(std::string_view text) {
  if (text.empty()) return invalid("empty cgroup path (the root cgroup is \"/\")");
  auto parsed = CgroupPath::parse(text);
  if (!parsed) return invalid(parsed.error().message);
  return parsed;
}

Result<CgroupPath> parseCgroupText(std::string_view text) {
  return parseCgroupArg(bytesFromText(text));
}

Result<BoostPermission> parseBoostPermission(std::string_view text) {
  if (text == "allow") return BoostPermission::Allow;
  if (text == "deny") return BoostPermission::Deny;
  return invalid("boost policy " + quoteForMessage(text) + " is not one of: allow, deny");
}

const char* boostPermissionName(BoostPermission p) {
  return p == BoostPermission::Allow ? "allow" : "deny";
}

Result<uint64_t> parseBandwidth(std::string_view text) {
  const std::string what = "bandwidth " + quoteForMessage(text);
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) {
    return invalid(what +
                   ": expected a number of bytes/s, optionally followed by K, M, G, T "
                   "(powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024)");
  }
  uint64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - d) / 10)
      return invalid(what + ": too large");
    value = value * 10 + d;
  }
  std::string_view suffix = text.substr(digits);
  uint64_t mult = 1;
  if (!suffix.empty()) {
    static constexpr std::string_view kUnits = "KMGT";
    auto pos = kUnits.find(suffix[0]);
    if (pos == std::string_view::npos || suffix.size() > 2 ||
        (suffix.size() == 2 && suffix[1] != 'i')) {
      return invalid(what + ": unknown unit '" + std::string(suffix) +
                     "' (use K, M, G, T or Ki, Mi, Gi, Ti)");
    }
    uint64_t base = suffix.size() == 2 ? 1024 : 1000;
    for (size_t i = 0; i <= pos; ++i) mult *= base;
  }
  if (value != 0 && value > std::numeric_limits<uint64_t>::max() / mult) {
    return invalid(what + ": too large");
  }
  value *= mult;
  if (value == 0) return invalid(what + ": must be at least 1 byte/s");
  if (value == std::numeric_limits<uint64_t>::max()) {
    return invalid(what + ": too large (use \"max\" for no limit)");
  }
  return value;
}

Result<BoostCeiling> parseBoostCeiling(std::string_view text) {
  if (text == "inherit") return BoostCeiling{BoostCeiling::Kind::Inherit, 0};
  if (text == "max") return BoostCeiling{BoostCeiling::Kind::Max, 0};
  auto bw = parseBandwidth(text);
  if (!bw) {
    return invalid("boost ceiling must be \"inherit\", \"max\" or a bandwidth; " +
                   bw.error().message);
  }
  return BoostCeiling{BoostCeiling::Kind::Bytes, *bw};
}

Result<MethodOptions> parseMethodOptions(const std::map<std::string, std::string>& keys,
                                         const std::map<std::string, bool>& boolValues,
                                         bool allowRuntime) {
  MethodOptions out;
  for (const auto& [key, sig] : keys) {
    bool* target = nullptr;
    if (key == "interactive") {
      target = &out.interactive;
    } else if (key == "runtime" && allowRuntime) {
      target = &out.runtime;
    } else {
      return invalid("unknown option " + quoteForMessage(key) + " for this method");
    }
    if (sig != "b") {
      return invalid("option '" + key + "' must be a boolean (b), got type '" + sig + "'");
    }
    auto it = boolValues.find(key);
    if (it == boolValues.end()) return invalid("option '" + key + "' has no value");
    *target = it->second;
  }
  return out;
}

}  // namespace cxiosync::dbus
