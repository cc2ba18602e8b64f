// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The YAML configuration (/etc/cxiosync/cxiosync.yaml + cxiosync.d/*.yaml): text -> plain
// structs -> validated. Pure: the caller reads the files (daemon/sources/config_loader.h).
// Schema and examples: docs/configuration.md.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/config/config_text.h"
#include "policy/config/knobs.h"
#include "policy/model/cgroup_path.h"
#include "policy/result.h"

namespace cxiosync {

// What one file states: only the keys it sets, each with its file:line.
struct ConfigFragment {
  std::optional<Sourced<DetectorKind>> detector;
  std::optional<Sourced<std::chrono::milliseconds>> pollInterval;
  std::optional<Sourced<bool>> watchFsync;
  std::optional<Sourced<uint64_t>> minDirtyBytes;
  std::optional<Sourced<bool>> dryRun;
  std::optional<Sourced<bool>> liftOnShutdown;
  std::map<CgroupPath, PolicySettings> cgroups;
};

// The merged, validated YAML layer.
struct Config {
  GlobalSettings global;                         // built-in defaults overridden by the files
  GlobalSources globalSources;                   // where each global came from
  std::map<CgroupPath, PolicySettings> cgroups;  // the YAML layer only (Kind::Yaml sources)
  std::vector<std::string> files;                // the files merged, in order
};

// Parses one file. Errors read "FILE:LINE:COL: KEY.PATH: message" (1-based line and column),
// e.g. "/etc/cxiosync/cxiosync.yaml:7:11: cgroups./system.slice.boost: invalid value 'maybe':
// expected allow or deny". An empty file (or one with only comments) is an empty fragment.
Result<ConfigFragment> parseConfigText(const ConfigText& file);

// Parses every file and merges them in the given order (the main file first, then
// cxiosync.d/*.yaml in lexical order): a later file overrides a global key or a cgroup's knob
// that an earlier file set; knobs it does not mention are kept. All or nothing: the first error
// in any file is returned and nothing is applied.
Result<Config> parseConfig(const std::vector<ConfigText>& files);

// Applies one fragment on top of `config` (the merge step of parseConfig).
void mergeConfigFragment(Config& config, const ConfigFragment& fragment);

// `cxiosyncd --check-config` / `cxiosyncctl check-config FILE`: parseConfig without the result.
Status checkConfig(const std::vector<ConfigText>& files);

}  // namespace cxiosync
