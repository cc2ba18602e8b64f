// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Turns the CG argument of cxiosyncctl into a cgroup path. Pure: what systemd knows comes in
// through UnitLookup (the real one, dbus/ctl/systemd_units.h, asks PID 1 over the system bus;
// tests feed answers).
//
//   "/a/b", "a/b"        → "/a/b" (a path; validated like the daemon does)
//   "-.slice"            → "/"
//   "backup.slice"       → "/backup.slice"
//   "a-b.slice"          → "/a.slice/a-b.slice"   (systemd's slice nesting by dashes)
//   "init.scope"         → "/init.scope"
//   slices and init.scope are exact by construction: systemd is not asked (and an inactive
//   slice still has its path, so policy can be set before it starts).
//   "foo.service", "x.scope" (other):
//     with a lookup that reaches systemd: the unit's ControlGroup property, whatever slice
//       it is in (user@1000.service, session-2.scope, machine scopes, Slice= overrides).
//       A unit with no cgroup (not active, or no such unit) is an error with code ENOENT,
//       which says which and, for an inactive unit, where its cgroup will be.
//     without (no lookup, or systemd not reachable): "/system.slice/foo.service", assuming
//       the default Slice=system.slice, with `note` saying so; pass a path when the unit
//       lives elsewhere.
// Names are escaped as systemd names cgroups (cg_escape: "io.service" → "_io.service").
// Invalid arguments are errors with code EINVAL.
//
// User units (cxiosyncctl --user[=UID]): the same names, inside the user's manager, whose
// cgroup is U = "/user.slice/user-UID.slice/user@UID.service" (systemd 252 and 257 alike):
//   "-.slice" → U, "app.slice" → U/app.slice, "a-b.slice" → U/a.slice/a-b.slice,
//   "init.scope" → U/init.scope (the user manager's own process);
//   "foo.service", "x.scope": the user manager's ControlGroup for the unit when `systemd` (a
//     lookup on that user's bus) reaches it; else U/app.slice/foo.service, the default slice
//     of user units (systemd.special(7): app.slice), with `note` saying so.
//   Paths are cgroup paths as without --user (they name the whole tree).
#include <cstdint>
#include <string>
#include <string_view>

#include "policy/config/dropin.h"  // cgroupEscape, the one slice -> cgroup mapping
#include "policy/result.h"

namespace cxiosync::ctl {

struct ResolvedCgroup {
  std::string path;          // "/a.slice/a-b.slice"
  bool fromUnit = false;     // the argument was a unit name
  bool assumed = false;      // resolved by assuming the default slice (services, scopes)
  bool fromSystemd = false;  // systemd's ControlGroup property
  std::string note;          // for stderr (without a newline); empty when there is nothing to say
};

// What systemd says about one unit.
struct UnitAnswer {
  // Reached: systemd answered with the unit's state (the fields below). Refused: systemd is
  // there but answered with an error (`reason`: its D-Bus error). Unreachable: systemd is not
  // running or not on the bus (`reason` says why).
  enum class Kind { Reached, Refused, Unreachable };
  Kind kind = Kind::Unreachable;
  std::string loadState;     // "loaded", "not-found", "masked", "bad-setting", ...
  std::string activeState;   // "active", "inactive", "failed", "activating", ...
  std::string controlGroup;  // "" = the unit has no cgroup now
  std::string slice;         // the unit's Slice= ("system.slice"), may be empty
  std::string reason;
};

class UnitLookup {
 public:
  virtual ~UnitLookup() = default;
  virtual UnitAnswer lookup(const std::string& unit) = 0;
};

// Without systemd (pure mapping only).
Result<ResolvedCgroup> resolveCgroupArg(std::string_view arg);
// `systemd` may be null (= the pure mapping).
Result<ResolvedCgroup> resolveCgroupArg(std::string_view arg, UnitLookup* systemd);
// A unit of UID's user manager; `systemd` asks that manager (may be null).
Result<ResolvedCgroup> resolveUserCgroupArg(std::string_view arg, uint32_t uid,
                                            UnitLookup* systemd);
// "/user.slice/user-UID.slice/user@UID.service"
std::string userManagerCgroup(uint32_t uid);

}  // namespace cxiosync::ctl
