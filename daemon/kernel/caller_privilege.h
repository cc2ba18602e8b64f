// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Is a bus caller that the bus driver calls uid 0 really privileged root? (audit L5)
//
// uid 0 skips polkit for every change. But root inside a container that shares the host's
// user namespace and system bus (a bind-mounted /run/dbus, docker's default capability set)
// is uid 0 on the bus without CAP_SYS_ADMIN: through us it could lift any cgroup's io.max
// or take any loop device, which its own read-only cgroupfs does not let it do. So the
// shortcut also needs CAP_SYS_ADMIN in the caller's effective set, as systemd asks of root
// (sd_bus_query_sender_privilege). Both lines come from /proc/PID/status read through one
// /proc/PID directory fd, so a reused pid fails the read instead of naming another process.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "policy/result.h"

namespace cxiosync {

inline constexpr int kCapSysAdmin = 21;  // linux/capability.h

// /proc/PID/status "Uid:" line -> the effective uid (second field). EINVAL when absent or
// malformed.
Result<uint32_t> parseStatusEuid(std::string_view statusText);
// /proc/PID/status "CapEff:" line (16 hex digits) -> the effective capability set. EINVAL
// when absent or malformed.
Result<uint64_t> parseStatusCapEff(std::string_view statusText);

// "" when process `pid` runs with effective uid 0 and CAP_SYS_ADMIN in its effective set;
// otherwise why not, for the caller's AccessDenied message ("process 42 has no CAP_SYS_ADMIN
// ...", "process 42 is gone").
std::string rootCallerProblem(pid_t pid, const std::string& procRoot = "/proc");

}  // namespace cxiosync
