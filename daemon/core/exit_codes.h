// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Exit codes of cxiosyncd, documented in --help, cxiosyncd(8) and cxiosyncd.service
// (RestartPreventExitStatus=2 5 6: a bad command line or configuration is not retried; every
// other non-zero status is restarted by Restart=on-failure).

namespace cxiosync {

inline constexpr int kExitOk = 0;       // clean stop; --check-config valid, --version, --help
inline constexpr int kExitFailure = 1;  // runtime failure (cgroup root, journal, ...)
inline constexpr int kExitUsage = 2;    // bad command line
// The D-Bus connection was lost (bus daemon restarted or dropped us): every boost was
// restored first; systemd restarts the daemon, which takes the name again.
inline constexpr int kExitBusLost = 3;
// The host lacks what the daemon needs: no cgroup2 io controller at the cgroup root (a hybrid
// or legacy layout), or `detector: tracefs` without tracefs. systemd's EXIT_NOTINSTALLED (LSB
// 5): retrying cannot help until the host is changed.
inline constexpr int kExitUnsupported = 5;
inline constexpr int kExitBadConfig = 6;  // invalid configuration (--check-config or start)

}  // namespace cxiosync
