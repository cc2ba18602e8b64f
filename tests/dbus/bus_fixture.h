// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// What the dbus tier's suites share (dbus_test.cpp, loop_dbus_test.cpp): running a command
// with its output captured, and a private dbus-daemon with a server on it. Every child dies
// with the test process (PR_SET_PDEATHSIG), so nothing leaks when a test crashes.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace cxiosync::bustest {

struct RunResult {
  int rc = -1;  // exit status, or 128 + signal
  std::string out, err;
};

// Forks and execs argv[0] (a path). The child's stdout goes to *outFd; its stderr to *errFd,
// or to /dev/null when errFd is null; its stdin comes from *inFd (the write end, for the
// caller), or is at EOF when inFd is null. -1 when the pipes cannot be made.
pid_t spawn(const std::vector<std::string>& argv, int* outFd, int* errFd, int* inFd = nullptr);

// Runs argv to completion with `input` on its stdin; killed (and "[test: timed out]"
// appended to err) after `timeout`.
RunResult run(const std::vector<std::string>& argv, const std::string& input = {},
              std::chrono::seconds timeout = std::chrono::seconds(30));

// One line from fd, without the newline ("" or what came so far on timeout or EOF).
std::string readLine(int fd, std::chrono::milliseconds timeout);

// Writes DIR/system.conf for a system-type bus listening on DIR/bus, with Debian's default
// rules (deny method calls and owning names unless a policy file allows them), polkit's
// policy file when installed, and the shipped packaging/org.cxiosync1.conf from
// `sourceDir` (the repository root). Creates DIR (0755). Returns the config's path. After
// startBus, chmod DIR/bus 0777 so that callers run as nobody can connect.
std::string writeSystemPolicyBusConfig(const std::string& dir, const std::string& sourceDir);

// A private dbus-daemon and, optionally, a server process on it.
class PrivateBus {
 public:
  PrivateBus() = default;
  PrivateBus(const PrivateBus&) = delete;
  PrivateBus& operator=(const PrivateBus&) = delete;
  ~PrivateBus() { stop(); }

  // Starts dbus-daemon --config-file=config; false when it printed no address.
  bool startBus(const std::string& config);
  // Starts argv (the caller puts the address into it) and waits up to `wait` for
  // org.cxiosync1 to be on the bus; false when it did not appear.
  bool startServer(const std::vector<std::string>& argv, std::chrono::milliseconds wait);
  void stopServer();  // SIGTERM, then waits
  void stop();        // the server, then the bus

  bool serverAlive() const;
  pid_t serverPid() const { return serverPid_; }
  const std::string& address() const { return address_; }

 private:
  pid_t busPid_ = -1, serverPid_ = -1;
  // The pipes stay open until stop(): a child writing to a closed pipe dies of SIGPIPE.
  int busOut_ = -1, serverOut_ = -1;
  std::string address_;
};

}  // namespace cxiosync::bustest
