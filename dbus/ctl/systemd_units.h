// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The real UnitLookup: asks the systemd system manager (org.freedesktop.systemd1 on the system
// bus) for a unit's cgroup. GetUnit first (no side effects; an active unit is always loaded);
// only when the unit is not loaded, LoadUnit, to tell "no such unit" from "inactive" (loading
// starts nothing, and systemd drops the unused unit again). Properties: LoadState and
// ActiveState on org.freedesktop.systemd1.Unit; ControlGroup and Slice on the type's own
// interface (org.freedesktop.systemd1.Service / .Scope: systemd's bus_unit_cgroup_vtable is
// registered per unit type, not on .Unit).
#include <cstdint>
#include <memory>

#include "dbus/bus_server.h"  // BusTarget
#include "dbus/ctl/unit_name.h"

namespace cxiosync::ctl {

// `bus`: where the manager is (the system bus; tests pass a private bus). Not booted with
// systemd (no /run/systemd/system), no bus, or no org.freedesktop.systemd1 on it:
// UnitAnswer::Kind::Unreachable. `checkBooted` = false skips the /run/systemd/system test.
std::unique_ptr<UnitLookup> systemdUnitLookup(
    const dbus::BusTarget& bus = dbus::BusTarget::system(), bool checkBooted = true);

// UID's user manager (user@UID.service), over its private socket /run/user/UID/systemd/private
// ($XDG_RUNTIME_DIR for the caller's own): the caller itself or root. No manager running:
// Unreachable.
std::unique_ptr<UnitLookup> userManagerLookup(uint32_t uid);

}  // namespace cxiosync::ctl
