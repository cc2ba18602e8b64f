// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/polkit_agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>

#include <string>

namespace cxiosync::ctl {

namespace {
constexpr const char* kAgent = "/usr/bin/pkttyagent";
constexpr int kRegisterTimeoutMs = 5000;
}  // namespace

PolkitAgent::PolkitAgent(bool allowed) {
  if (!allowed || geteuid() == 0 || !isatty(STDIN_FILENO) || access(kAgent, X_OK) != 0) return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    // The notify fd must survive exec; the read end must not.
    close(fds[0]);
    int notify = fcntl(fds[1], F_DUPFD, 3);  // a fresh descriptor without FD_CLOEXEC
    std::string n = std::to_string(notify);
    execl(kAgent, kAgent, "--notify-fd", n.c_str(), "--fallback", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  // Registered when the agent closes its end (POLLHUP); give up waiting after a while.
  struct pollfd p = {fds[0], POLLIN, 0};
  (void)poll(&p, 1, kRegisterTimeoutMs);
  close(fds[0]);
  pid_ = pid;
}

PolkitAgent::~PolkitAgent() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace cxiosync::ctl
