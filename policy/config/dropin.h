// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// systemd unit drop-ins carrying cxiosync policy, e.g.
// /etc/systemd/system/backup.slice.d/70-cxiosync.conf:
//
//   [X-CxIOSync]
//   SyncIsolation=on
//   Boost=allow
//   BoostCeiling=inherit        # inherit | max | rate (10M = 10^7 B/s, like IOWriteBandwidthMax=)
//   MaxBoostSec=30s
//   BoostBudget=25% of 2min
//   Tenant=yes                  # this unit's cgroup is a tenant boundary
//   TenantSync=self             # self | foreign: a same-tenant sync is a self-sync (default)
//
// systemd ignores X- sections by design; we read only that section and ignore all others.
// Pure: the daemon lists directories and reads files (daemon/sources/config_loader.h), or asks
// systemd for DropInPaths. Semantics: docs/configuration.md, docs/policy-semantics.md.
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/config_text.h"
#include "policy/config/knobs.h"
#include "policy/model/cgroup_path.h"
#include "policy/result.h"

namespace cxiosync {

inline constexpr std::string_view kDropInSection = "X-CxIOSync";

enum class DropInKey {
  SyncIsolation,
  Boost,
  BoostCeiling,
  MaxBoostSec,
  BoostBudget,
  Tenant,
  TenantSync
};
std::string_view dropInKeyName(DropInKey key);  // "SyncIsolation", ...

// One assignment in an [X-CxIOSync] section. An empty `value` ("Boost=") resets the key:
// whatever earlier assignments (in this or earlier files) set is forgotten.
struct DropInAssignment {
  DropInKey key;
  std::string value;  // unquoted; already validated by the knob parser
  int line = 0;       // 1-based line where the (possibly continued) assignment starts
};

// Parses one drop-in file with systemd's syntax: `#`/`;` comment lines (also inside a
// continuation), a trailing backslash continues the line (joined with a space), whitespace
// around keys and values is stripped, a value wrapped in "..." or '...' is unquoted (\\, \",
// \' escapes), a UTF-8 BOM is skipped, later [X-CxIOSync] sections add to earlier ones. Every
// value is validated. Errors read "FILE:LINE: [X-CxIOSync] Key: message".
Result<std::vector<DropInAssignment>> parseDropInText(const ConfigText& file);

// Applies the drop-ins of one unit, in the order systemd applies them (orderDropInFiles() or
// systemd's DropInPaths): a later assignment wins, an empty one resets. Sources are
// Kind::DropIn with file:line. All or nothing: the first error in any file is returned.
Result<PolicySettings> parseDropIns(const std::vector<ConfigText>& orderedFiles);

// ---- Standard-conf precedence (systemd.unit(5)), for when systemd cannot be asked. ----

// The system manager's unit search path, highest priority first (systemd-analyze unit-paths,
// plus /lib/systemd/system for systems without merged /usr).
const std::vector<std::string>& systemUnitSearchPath();

// The drop-in directories systemd searches for `unit`, highest priority first: for each search
// path dir, "<unit>.d", then for an instance "foo@bar.service" its template "foo@.service.d",
// then the dash prefixes ("a-b-c.slice" -> "a-b-.slice.d", "a-.slice.d"); and last, for each
// search path, the type-wide "<type>.d" ("slice.d"). A slice's drop-ins are NOT inherited from
// its parent slice's drop-in dir: "a.slice.d" does not apply to "a-b.slice" (only the prefix
// dirs do); inheritance down the cgroup tree is our resolver's job, not systemd's.
// Returns an empty list for an invalid unit name.
std::vector<std::string> dropInDirsFor(std::string_view unit,
                                       const std::vector<std::string>& searchPath);

struct FoundDropIn {
  std::string dir;   // one of dropInDirsFor()'s directories
  std::string name;  // file name inside it
};

// Orders the drop-in files found in `dirs` (highest priority first, as dropInDirsFor returns)
// the way systemd applies them: only "*.conf"; a file name found in a higher-priority directory
// masks the same name in every lower one (so an empty file or a /dev/null symlink in /etc
// disables a vendor drop-in); the survivors are applied sorted by file name, whatever their
// directory. Entries whose dir is not in `dirs` are ignored. Returns full paths "dir/name".
std::vector<std::string> orderDropInFiles(const std::vector<std::string>& dirs,
                                          const std::vector<FoundDropIn>& found);

// ---- Unit names <-> cgroup paths ----

// True for a valid unit name with a known type suffix (service, socket, scope, slice, mount,
// swap, ...), optionally a template/instance ("foo@.service", "foo@bar.service").
bool isValidUnitName(std::string_view unit);

// "a-b-c.slice" -> /a.slice/a-b.slice/a-b-c.slice; "-.slice" -> / . Rejects names that are not
// valid slice names (leading/trailing/double dashes, bad characters, other unit types).
Result<CgroupPath> sliceUnitToCgroupPath(std::string_view unit);

// systemd's cg_escape() for one cgroup path component (cgroup-util.c, systemd 252-257):
// prefixes "_" when the name could clash with a kernel file ("cgroup.*", "tasks", a
// controller's "io.*", a leading '_' or '.'): "io.slice" lives at /_io.slice.
std::string cgroupEscape(std::string_view name);
// The inverse for one component: "_io.slice" -> "io.slice"; names cg_escape would not have
// produced are returned as they are.
std::string cgroupUnescape(std::string_view name);

// The inverse for a pure slice hierarchy: / -> "-.slice", /a.slice/a-b.slice -> "a-b.slice".
// Rejects paths whose components are not the slice names systemd would nest there.
Result<std::string> cgroupPathToSliceUnit(const CgroupPath& path);

// The unit that owns `path` as systemd lays cgroups out: the root is "-.slice"; otherwise the
// last component when it is a unit name directly under a consistent slice chain
// ("/system.slice/foo.service" -> "foo.service"). Empty for paths systemd does not name
// (e.g. inside a delegated subtree: "/system.slice/docker.service/payload").
std::string unitForCgroupPath(const CgroupPath& path);

}  // namespace cxiosync
