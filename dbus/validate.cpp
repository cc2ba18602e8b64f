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
  auto p = cxiosync::parseBoostPermission(text);
  if (!p) return invalid("boost policy: " + p.error().message);
  return *p;
}

const char* boostPermissionName(BoostPermission p) {
  return p == BoostPermission::Allow ? "allow" : "deny";
}

Result<BoostCeiling> parseBoostCeiling(std::string_view text) {
  auto c = cxiosync::parseBoostCeiling(text);
  if (!c) return invalid("boost ceiling: " + c.error().message);
  return *c;
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
