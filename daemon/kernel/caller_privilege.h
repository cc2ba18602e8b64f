// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Is a bus caller that the bus driver calls uid 0 really privileged root? (audit L5, issue 25)
//
// uid 0 skips polkit for every change. But uid 0 on the bus is not enough:
// - root inside a container that shares the host's user namespace and system bus (a
//   bind-mounted /run/dbus, docker's default capability set) has no CAP_SYS_ADMIN; so the
//   shortcut needs CAP_SYS_ADMIN in the caller's effective set, as systemd asks of root;
// - that same root can `unshare -Ur`: in a new user namespace its CapEff is full, and /proc
//   prints it untranslated, while the bus still names uid 0. Capabilities there are worth
//   nothing on the host, so the caller must also be in the daemon's own (initial) user
//   namespace: /proc/PID/ns/user is the daemon's /proc/self/ns/user (st_dev, st_ino);
// - the pid the bus names was recorded when the caller connected; if that process has
//   exited, the pid may now be a privileged root process's. Where the bus hands out a pidfd
//   (GetConnectionCredentials "ProcessFD": dbus >= 1.15, dbus-broker >= 34) it is checked
//   after the reads: still alive and still that pid means every read described the caller.
//   Without one (Debian 12's dbus 1.14) the pid is pinned by its start time (field 22 of
//   /proc/PID/stat), read before and after the other reads through the same /proc/PID
//   directory fd; a pid reused before the lookup cannot be told apart there (the bus gives
//   neither a pidfd nor the connection's time), which is why the pidfd is preferred.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/kernel/fs.h"
#include "policy/result.h"

namespace cxiosync {

inline constexpr int kCapSysAdmin = 21;  // linux/capability.h

// /proc/PID/status "Uid:" line -> the effective uid (second field). EINVAL when absent or
// malformed.
Result<uint32_t> parseStatusEuid(std::string_view statusText);
// /proc/PID/status "CapEff:" line (16 hex digits) -> the effective capability set. EINVAL
// when absent or malformed.
Result<uint64_t> parseStatusCapEff(std::string_view statusText);
// A pidfd's /proc/self/fdinfo/N "Pid:" line -> the pid (-1 once the process was reaped,
// 0 when it is in no pid namespace of ours). EINVAL when absent or malformed.
Result<int64_t> parseFdinfoPid(std::string_view fdinfoText);

// The process the bus named, pinned while it is read: /proc/PID opened once, its start time
// read at once; stillSame() says whether everything read through dir() since described it.
class PinnedProcess {
 public:
  // pidfd: the bus's ProcessFD, or -1 (not owned; must stay open until stillSame()).
  // ESRCH when the process is gone (or pid <= 0).
  static Result<PinnedProcess> open(pid_t pid, int pidfd, const std::string& procRoot = "/proc");
  int dir() const { return dir_.get(); }
  const std::string& path() const { return path_; }  // "/proc/42", for messages
  // ESRCH when the process exited or its pid now names another process (start time changed;
  // with a pidfd: the pidfd's process exited or has another pid).
  Status stillSame() const;

 private:
  PinnedProcess(UniqueFd dir, std::string path, pid_t pid, int pidfd, uint64_t start)
      : dir_(std::move(dir)), path_(std::move(path)), pid_(pid), pidfd_(pidfd), start_(start) {}
  Result<uint64_t> startTime() const;
  UniqueFd dir_;
  std::string path_;
  pid_t pid_;
  int pidfd_;
  uint64_t start_;
};

// "" when process `pid` (pinned by `pidfd` where the bus gave one, else -1) runs with
// effective uid 0 and CAP_SYS_ADMIN in its effective set, in the user namespace of
// procRoot/self, and was the same process for all of these reads. Otherwise what was found,
// for the daemon's log only: the caller is told the generic kRootRefusal (bus_server.h), so
// that the text cannot show an attacker when a reused pid answers for it.
std::string rootCallerProblem(pid_t pid, int pidfd, const std::string& procRoot = "/proc");

}  // namespace cxiosync
