// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Argument validation for the bus boundary: pure functions, no sdbus-c++ types, no I/O.
// Every error is EINVAL (→ org.cxiosync1.Error.InvalidArgument) with a message a person can act
// on. The same functions serve cxiosyncctl, so the CLI rejects what the daemon would.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "policy/config/knobs.h"
#include "policy/config/values.h"
#include "policy/model/cgroup_path.h"
#include "policy/result.h"

namespace cxiosync::dbus {

// A cgroup argument: CgroupPath::parse (no "..", ".", NUL/control characters, length limits),
// plus: not empty (the root is "/"). Confinement to the cgroup root is then structural (the
// path is relative to it); existence and symlinks are the backend's check.
Result<CgroupPath> parseCgroupArg(std::string_view text);

// A cgroup argument as it arrives on the bus or the command line: text, in which \xNN stands
// for a byte of the name that is not UTF-8 (the one escape of policy/bytes_text.h, the form
// every reply and signal writes names in). Decoded to the name's bytes, then parseCgroupArg.
// Decoding yields only bytes >= 0x80 and '\\', never '/', '.', NUL or a control byte, so it
// cannot make a path that the text form would not pass.
Result<CgroupPath> parseCgroupText(std::string_view text);

// The policy values of the setters, in the one value syntax of YAML, drop-ins and cxiosyncctl
// (policy/config/values.h, docs/configuration.md §1.3), so the bus accepts exactly what a
// config file does; errors are EINVAL.
Result<BoostPermission> parseBoostPermission(std::string_view text);  // allow | deny | boolean
const char* boostPermissionName(BoostPermission p);

// "inherit" | "max" | a rate (parseRate: 10M = 10^7, 10MiB/s = 10 * 2^20).
Result<BoostCeiling> parseBoostCeiling(std::string_view text);

// Options of a method call, by D-Bus signature of each value ("b", "s", ...).
// Known keys (see org.cxiosync1.xml): "interactive" (b) everywhere, "runtime" (b) on setters.
struct MethodOptions {
  bool interactive = false;
  bool runtime = false;
};
// `keys`: key → signature of the variant's value. `allowRuntime`: whether "runtime" is
// accepted by this method. Unknown keys and wrong types are errors.
Result<MethodOptions> parseMethodOptions(const std::map<std::string, std::string>& keys,
                                         const std::map<std::string, bool>& boolValues,
                                         bool allowRuntime);

}  // namespace cxiosync::dbus
