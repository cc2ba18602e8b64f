// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/dbus/bus_fixture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "dbus/client.h"

namespace cxiosync::bustest {

using namespace std::chrono_literals;

pid_t spawn(const std::vector<std::string>& argv, int* outFd, int* errFd, int* inFd) {
  int out[2], err[2], in[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(in, O_CLOEXEC)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(in[0], 0);
    dup2(out[1], 1);
    if (errFd) {
      dup2(err[1], 2);
    } else {
      // Without a reader for stderr, /dev/null: a write to a closed pipe would kill the child.
      int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
      dup2(devnull, 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  close(in[0]);
  *outFd = out[0];
  if (errFd) {
    *errFd = err[0];
  } else {
    close(err[0]);
  }
  if (inFd) {
    *inFd = in[1];
  } else {
    close(in[1]);
  }
  return pid;
}

RunResult run(const std::vector<std::string>& argv, const std::string& input,
              std::chrono::seconds timeout) {
  RunResult r;
  int outFd, errFd, inFd;
  pid_t pid = spawn(argv, &outFd, &errFd, &inFd);
  if (!input.empty()) {
    if (write(inFd, input.data(), input.size()) < 0) r.err = "write failed";
  }
  close(inFd);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool outOpen = true, errOpen = true;
  while (outOpen || errOpen) {
    struct pollfd fds[2] = {{outOpen ? outFd : -1, POLLIN, 0}, {errOpen ? errFd : -1, POLLIN, 0}};
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0 || poll(fds, 2, left) <= 0) {
      kill(pid, SIGKILL);
      r.err += "\n[test: timed out]";
      break;
    }
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        (i == 0 ? outOpen : errOpen) = false;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  close(outFd);
  close(errFd);
  int status = 0;
  waitpid(pid, &status, 0);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string readLine(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    struct pollfd p = {fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, left) <= 0) return line;
    char c;
    if (read(fd, &c, 1) != 1) return line;
    if (c == '\n') return line;
    line += c;
  }
}

std::string writeSystemPolicyBusConfig(const std::string& dir, const std::string& sourceDir) {
  std::filesystem::create_directories(dir);
  chmod(dir.c_str(), 0755);
  std::string conf = dir + "/system.conf";
  std::ofstream(conf)
      << R"(<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=)"
      << dir << R"(/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <include ignore_missing="yes">/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf</include>
  <include>)"
      << sourceDir << R"(/packaging/org.cxiosync1.conf</include>
</busconfig>
)";
  return conf;
}

bool PrivateBus::startBus(const std::string& config) {
  busPid_ =
      spawn({"/usr/bin/dbus-daemon", "--config-file=" + config, "--print-address=1", "--nofork"},
            &busOut_, nullptr);
  address_ = readLine(busOut_, 10s);
  return !address_.empty();
}

bool PrivateBus::startServer(const std::vector<std::string>& argv, std::chrono::milliseconds wait) {
  serverPid_ = spawn(argv, &serverOut_, nullptr);
  // Ready when the name is on the bus.
  auto client = dbus::Client::connect(dbus::BusTarget::at(address_));
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    if (client->daemonRunning()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(25ms);
  }
}

namespace {

// SIGTERM, wait, and close its output pipe; nothing when not running.
void stopChild(pid_t& pid, int& outFd) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  int st;
  waitpid(pid, &st, 0);
  pid = -1;
  close(outFd);
  outFd = -1;
}

}  // namespace

void PrivateBus::stopServer() {
  stopChild(serverPid_, serverOut_);
}

void PrivateBus::stop() {
  stopChild(serverPid_, serverOut_);
  stopChild(busPid_, busOut_);
}

bool PrivateBus::serverAlive() const {
  return serverPid_ > 0 && kill(serverPid_, 0) == 0;
}

}  // namespace cxiosync::bustest
