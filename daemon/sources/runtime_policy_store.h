// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The runtime policy layer (docs/architecture.md §3: highest precedence): settings made through
// D-Bus/cxiosyncctl, kept in two files
//
//   <state-dir>/runtime-policy.json   persistent (default /var/lib/cxiosync): survives reboots
//   <run-dir>/runtime-policy.json     `--runtime` changes (a tmpfs): lost at reboot
//
// A `--runtime` value shadows a persistent one for the same cgroup and knob; a persistent
// change drops a `--runtime` value of the same knob (the latest change wins, unlike systemd's
// set-property, where an old --runtime value keeps shadowing). Reset drops both.
//
// Schema (version 1), knob values in their canonical text (policy/config/values.h):
//   {"version":1,"cgroups":{"/cg2":{"sync_isolation":"on","boost":"deny"}}}
//
// Cgroup names are bytes as text (policy/json.h). Files are replaced with temp + fsync +
// rename + fsync of the directory (issue 16): a change happens only when an operator makes
// one, never on the throttled I/O path, and a setting the caller was told is stored must
// survive a power cut. Reading is tolerant: unknown keys are ignored, a newer version is read
// for what is understood, a cgroup or knob that cannot be read is skipped (reported, and a
// copy of the file kept, since the next change rewrites it without them). A file that is not
// a JSON object with a version is moved aside at load, never fatal.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/knobs.h"
#include "policy/model/cgroup_path.h"
#include "policy/result.h"

namespace cxiosync {

inline constexpr const char* kRuntimePolicyFile = "runtime-policy.json";
inline constexpr int kRuntimePolicyVersion = 1;
inline constexpr const char* kDefaultStateDir = "/var/lib/cxiosync";

// cgroup -> knob name -> canonical value text.
using RuntimeEntries = std::map<CgroupPath, std::map<std::string, std::string>>;

// Pure: the schema above. Parsing validates every cgroup path, knob name and value.
std::string serializeRuntimePolicy(const RuntimeEntries& entries);
// Cgroups and knobs that cannot be read are left out, and why is added to `skipped`.
Result<RuntimeEntries> parseRuntimePolicy(std::string_view text,
                                          std::vector<std::string>* skipped = nullptr);

// Entries -> the resolver's runtime layer (every value with ValueSource::runtime()).
std::map<CgroupPath, PolicySettings> runtimeLayerOf(const RuntimeEntries& entries);

class RuntimePolicyStore {
 public:
  RuntimePolicyStore(std::string stateDir, std::string runDir);

  struct LoadReport {
    size_t persistent = 0, volatileCount = 0;  // cgroups with settings
    std::vector<std::string> problems;         // one line each (moved aside, unreadable)
  };
  // Reads both files (missing = empty). Never fails: problems are reported, bad files are
  // renamed to `<file>.corrupt-<unix-seconds>` and treated as empty; a file with entries
  // that cannot be read is copied there and its other entries are used.
  LoadReport load();

  // Sets one knob (value already validated; canonical text). Writes the affected file(s)
  // first; on a write error nothing changes in memory and the error is returned.
  Status set(const CgroupPath& cgroup, std::string_view knob, std::string value, bool runtime);
  // Drops every setting of `cgroup` from both files. Returns whether there was anything.
  Result<bool> reset(const CgroupPath& cgroup);
  bool has(const CgroupPath& cgroup) const;

  // The merged layer for the resolver (--runtime values over persistent ones).
  std::map<CgroupPath, PolicySettings> layer() const;

  const RuntimeEntries& persistent() const { return persistent_; }
  const RuntimeEntries& volatileEntries() const { return volatile_; }
  const std::string& persistentPath() const { return persistentPath_; }
  const std::string& volatilePath() const { return volatilePath_; }

 private:
  static Status save(const std::string& dir, const std::string& path, const RuntimeEntries& e);
  std::string stateDir_, runDir_, persistentPath_, volatilePath_;
  RuntimeEntries persistent_, volatile_;
};

}  // namespace cxiosync
