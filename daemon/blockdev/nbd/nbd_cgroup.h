// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Whose cgroup pays for an nbd device's backing I/O (issue 17 item 5).
//
// With a kernel loop device the loop worker re-issues a request in the cgroup that issued it
// (5.14+), so a tenant's io.max on the backing disk still applies. The nbd backend's I/O is
// done by cxiosync-nbd-server, and the block layer charges it to the *server's* cgroup: left
// in the daemon's cgroup, a tenant's nbd device would escape the tenant's io.max. So the
// server can be started in the cgroup of the caller of LoopSetup ("caller"), or beside the
// daemon ("daemon"). Default: "caller" for non-root callers, "daemon" for root (root's I/O
// is not limited by a tenant policy, and root callers are often the daemon's own tooling).
//
// The caller's cgroup comes from /proc/PID/cgroup of the pid the bus reported, which is
// hostile input: the path must be a plain absolute cgroup v2 path (no "..", no "." and no
// empty components; a path outside our cgroup namespace shows as "/.."), it is opened below
// the cgroup root without following any symlink (openat2 RESOLVE_BENEATH|NO_SYMLINKS), the
// opened directory must be on cgroup2, and the process's effective uid (read from the same
// /proc/PID directory fd, so a recycled pid cannot mix two processes) must be the uid the bus
// named. A failure fails the setup: the server never silently runs in the daemon's cgroup.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/kernel/caller_privilege.h"
#include "daemon/kernel/fs.h"
#include "policy/result.h"

namespace cxiosync::nbd {

enum class ServerCgroup { Default, Caller, Daemon };
// "caller" | "daemon" | "" (= Default). EINVAL naming the accepted values otherwise.
Result<ServerCgroup> parseServerCgroup(std::string_view text);
const char* serverCgroupName(ServerCgroup m);  // "default" | "caller" | "daemon"
// Default -> Caller for uid != 0, Daemon for uid 0; explicit choices stay.
ServerCgroup effectiveServerCgroup(ServerCgroup asked, uint32_t callerUid);

// A cgroup v2 path from /proc ("/a/b", "/") -> the relative path to open below the cgroup
// root ("a/b", "."). EINVAL for "", a path not starting with '/', "..", "." or empty
// components, NUL bytes, more than 4096 bytes.
Result<std::string> cgroupRelativePath(std::string_view procPath);

struct TargetCgroup {
  std::string path;  // "/user.slice/user-1000.slice/session-3.scope" (as /proc shows it)
  UniqueFd dir;      // O_RDONLY|O_DIRECTORY on the cgroup2 directory (for CLONE_INTO_CGROUP)
};
// Opens the cgroup the process `pid` is in, checked as described above.
// ESRCH: the process is gone; EPERM: its uid is not `expectedUid`; ENOENT: its cgroup was
// removed; ENOTSUP: no cgroup v2 (pure v1) or the directory is not on cgroup2; EINVAL: a
// path we refuse.
Result<TargetCgroup> openProcessCgroup(pid_t pid, uint32_t expectedUid,
                                       const std::string& procRoot = "/proc",
                                       const std::string& cgroupRoot = "/sys/fs/cgroup");
// EBUSY when the target cgroup is frozen: its own cgroup.freeze is 1, or cgroup.events says
// "frozen 1" (also when an ancestor froze it). A server cloned into it would start frozen and
// never report ready (issue 26 item 3: a tenant freezing its cgroup right after LoopSetup held
// the nbd worker for 60 s and later took a device with no record). Kernels before 5.2 have no
// freezer files in cgroup v2: nothing to refuse.
Status refuseFrozen(const TargetCgroup& t);

// The cgroup v2 path `pid` is in now ("" when it cannot be read).
std::string processCgroupPath(pid_t pid, const std::string& procRoot = "/proc");

}  // namespace cxiosync::nbd
