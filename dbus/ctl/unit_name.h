#pragma once
// Turns the CG argument of cxiosyncctl into a cgroup path. Pure (no systemd calls).
//
//   "/a/b", "a/b"        → "/a/b" (a path; validated like the daemon does)
//   "-.slice"            → "/"
//   "backup.slice"       → "/backup.slice"
//   "a-b.slice"          → "/a.slice/a-b.slice"   (systemd's slice nesting by dashes)
//   "init.scope"         → "/init.scope"
//   "foo.service"/"x.scope" (other) → "/system.slice/foo.service", assuming the default
//                          Slice=system.slice; pass a path when the unit lives elsewhere
//                          (e.g. user units, machine scopes).
#include <string>
#include <string_view>

#include "policy/result.h"

namespace cxiosync::ctl {

struct ResolvedCgroup {
  std::string path;       // "/a.slice/a-b.slice"
  bool fromUnit = false;  // the argument was a unit name
  bool assumed = false;   // resolved by assuming the default slice (services, scopes)
};

Result<ResolvedCgroup> resolveCgroupArg(std::string_view arg);

}  // namespace cxiosync::ctl
