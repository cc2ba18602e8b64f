// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Exit codes of cxiosyncd, documented in --help and cxiosyncd.service
// (RestartPreventExitStatus=2 6: a bad command line or configuration is not retried).

namespace cxiosync {

inline constexpr int kExitOk = 0;         // clean stop; --check-config valid, --version, --help
inline constexpr int kExitFailure = 1;    // runtime failure (cgroup root, journal, ...)
inline constexpr int kExitUsage = 2;      // bad command line
inline constexpr int kExitBadConfig = 6;  // invalid configuration (--check-config or start)

}  // namespace cxiosync
