// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Reads configuration from disk and hands the text to the pure parsers in policy/config/.
// The only place that touches the filesystem for configuration; every root is injectable.
//
//   /etc/cxiosync/cxiosync.yaml         main file (optional: built-in defaults apply without it)
//   /etc/cxiosync/cxiosync.d/*.yaml     merged after it, sorted by file name (bytewise)
//
// Synchronous file I/O: call at startup, on SIGHUP and for --check-config, never on the event
// loop's hot path (/etc may sit on the stalled disk the daemon exists to help).
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/dropin.h"
#include "policy/config/knobs.h"
#include "policy/config/yaml_config.h"
#include "policy/result.h"

namespace cxiosync {

inline constexpr std::string_view kDefaultConfigDir = "/etc/cxiosync";
inline constexpr std::string_view kMainConfigFile = "cxiosync.yaml";
inline constexpr std::string_view kConfigDropInDir = "cxiosync.d";
inline constexpr size_t kMaxConfigFileBytes = 1 << 20;  // refuse anything larger than 1 MiB

// Reads a whole regular file (O_CLOEXEC). Errors carry errno and the path; files larger than
// kMaxConfigFileBytes and non-regular files are refused.
Result<std::string> readConfigFile(const std::string& path);

// The files loadConfig() merges, in order: `configDir`/cxiosync.yaml if it exists, then the
// regular files `configDir`/cxiosync.d/*.yaml sorted by name. Names starting with '.' (editor
// temporaries) and anything not ending in ".yaml" are skipped. A missing directory is not an
// error; an unreadable one is (with errno).
Result<std::vector<std::string>> listConfigFiles(const std::string& configDir);

// Reads and validates the whole configuration: all files or nothing. On error the message is
// "FILE:LINE:COL: key.path: ..." (or "FILE: <strerror>" for I/O) and nothing is applied: keep
// running with the previous Config on SIGHUP, exit with a distinct code at startup.
Result<Config> loadConfig(const std::string& configDir = std::string(kDefaultConfigDir));

// `cxiosyncd --check-config [PATH]` and `cxiosyncctl check-config FILE`: a regular file is checked
// on its own; a directory is checked the way loadConfig() reads it.
Result<Config> checkConfigPath(const std::string& path);

// The [X-CxIOSync] settings of one unit, from drop-in files.
struct UnitDropIns {
  std::vector<std::string> files;  // applied in this order
  PolicySettings settings;
};

// Without systemd: `unit`'s drop-in files with the standard-conf precedence (dropInDirsFor +
// orderDropInFiles) below `root` ("" = the real /; a temp dir in tests), in the order they
// apply. Missing directories are skipped; an unreadable one is an error.
Result<std::vector<std::string>> findUnitDropIns(
    std::string_view unit, const std::string& root = "",
    const std::vector<std::string>& searchPath = systemUnitSearchPath());

// findUnitDropIns() + loadDropInFiles(). All or nothing for the unit.
Result<UnitDropIns> loadUnitDropIns(
    std::string_view unit, const std::string& root = "",
    const std::vector<std::string>& searchPath = systemUnitSearchPath());

// With systemd: reads exactly the files of the unit's DropInPaths property (already in systemd's
// order; files without an [X-CxIOSync] section contribute nothing) and parses them.
Result<UnitDropIns> loadDropInFiles(const std::vector<std::string>& orderedPaths);

}  // namespace cxiosync
