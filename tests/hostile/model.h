// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// What the hostile tier expects of each call, written from the API's documentation
// (dbus/org.cxiosync1.xml, docs/dbus-api.md), not from the daemon's code: the cgroup path
// rules, the bandwidth grammar, the option keys and types of each method, and who may change
// what. Every hostile call is mapped to the one error name the documentation gives for it.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cxiosync::hostile {

inline constexpr const char* kInvalidArgument = "org.cxiosync1.Error.InvalidArgument";
inline constexpr const char* kNoSuchCgroup = "org.cxiosync1.Error.NoSuchCgroup";
inline constexpr const char* kAccessDenied = "org.cxiosync1.Error.AccessDenied";
inline constexpr const char* kNotSupported = "org.cxiosync1.Error.NotSupported";
inline constexpr const char* kInvalidArgs = "org.freedesktop.DBus.Error.InvalidArgs";
inline constexpr const char* kUnknownMethod = "org.freedesktop.DBus.Error.UnknownMethod";
inline constexpr const char* kUnknownObject = "org.freedesktop.DBus.Error.UnknownObject";
inline constexpr const char* kBusAccessDenied = "org.freedesktop.DBus.Error.AccessDenied";
inline constexpr const char* kOk = "";  // a successful reply

// The argument as the daemon sees it after the \xNN escape (bytes >= 0x80 and \x5c only).
std::string unescape(const std::string& text);

// A cgroup path argument: nullopt when it is InvalidArgument ("." / "..", control bytes or
// NUL, a component over 255 bytes, over 4096 bytes, empty); else the relative path.
std::optional<std::string> cgroupPath(const std::string& text);
// Whether `rel` is a directory below `root` reached without a symlink (else NoSuchCgroup).
bool cgroupExists(const std::filesystem::path& root, const std::string& rel);

// SetBoostCeiling's @ceiling and SetBoostPolicy's @policy: what a config file accepts for
// boost_ceiling and boost (policy/config/values.h, docs/configuration.md §1.3).
bool validCeiling(const std::string& text);
bool validBoostPolicy(const std::string& text);

// The keys a method accepts in its a{sv} options, with their types ("b", "t", ...).
struct OptionRule {
  const char* key;
  const char* type;
};
std::vector<OptionRule> optionRules(const std::string& method);

}  // namespace cxiosync::hostile
