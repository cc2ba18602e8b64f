// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The real cxiosyncd on a private dbus-daemon over a fake cgroup tree, for tests that call it
// as root and as other uids (the hostile tier, the bounded-waiting tests).
//
// The bus: a system-type dbus-daemon with the system bus's limits that matter here
// (max_replies_per_connection 128, max_message_unix_fds 16), any uid may connect (the socket is
// made 0777 in a 0755 directory), the SHIPPED packaging/org.cxiosync1.conf decides who may
// call what on org.cxiosync1, and root may own org.freedesktop.PolicyKit1 (a fake polkit).
// Every child dies with the test process (PR_SET_PDEATHSIG).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cxiosync::hostile {

inline constexpr uint32_t kNobody = 65534;

// `n` uids other than root that this system knows (nobody first, then /etc/passwd order):
// dbus-daemon refuses a connection from a uid it cannot look up.
std::vector<uint32_t> otherUids(size_t n);

// Forks; the child drops to uid/gid `uid` (no supplementary groups) unless uid is 0, runs
// `body` and _exits with its result (125 when it could not drop). Its stdout goes to `out`
// when given. Returns the child's pid.
pid_t forkAs(uint32_t uid, const std::function<int()>& body, int outFd = -1);
// Waits for pid; its exit status, 128 + signal, or -1 after `timeout` (then killed).
int waitChild(pid_t pid, std::chrono::milliseconds timeout);

std::string slurp(const std::filesystem::path& path);

class Harness {
 public:
  // `sourceDir`: the repository root (for packaging/org.cxiosync1.conf); `daemon`: cxiosyncd.
  Harness(std::string sourceDir, std::string daemon);
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path cg() const { return dir_ / "cg"; }
  const std::string& address() const { return address_; }

  bool startBus();
  void stopBus();  // SIGKILL-free: SIGTERM and wait
  pid_t busPid() const { return bus_; }
  // Starts cxiosyncd (log in dir()/daemon.log) and waits until it owns org.cxiosync1. An extra
  // "--name=value" replaces the default of that option (fake /proc, /sys, ... below dir()).
  bool startDaemon(const std::vector<std::string>& extraArgs = {});
  // SIGTERM; the exit status (or 128 + signal; -1 when it was not running).
  int stopDaemon();
  // Waits for the daemon to exit on its own; its status, or -1 after `timeout`.
  int waitDaemon(std::chrono::milliseconds timeout);
  bool daemonAlive() const;
  pid_t daemonPid() const { return daemon_; }
  std::string log() const { return slurp(dir_ / "daemon.log"); }

  // /proc/PID/fd entries and VmRSS (kB) of the daemon; -1 when unreadable.
  long fdCount() const;
  // "fd -> target" per line, for a failure message.
  std::string fdList() const;
  long rssKb() const;

  // Every regular file under run/, state/ and every io.max under cg/ (not metrics.prom, which
  // the daemon rewrites every tick), with its content.
  std::map<std::string, std::string> stateSnapshot() const;

 private:
  std::string sourceDir_, daemonPath_;
  std::filesystem::path dir_;
  std::string address_;
  pid_t bus_ = -1, daemon_ = -1;
  int busOut_ = -1;
};

// The loop devices bound on this host, "loopN=backing file", sorted (from /sys/block).
std::vector<std::string> boundLoopDevices();

}  // namespace cxiosync::hostile
