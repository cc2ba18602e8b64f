// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/hostile/harness.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "dbus/client.h"

namespace cxiosync::hostile {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

pid_t spawn(const std::vector<std::string>& argv, int outFd, int errFd) {
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(devnull, 0);
    dup2(outFd >= 0 ? outFd : devnull, 1);
    dup2(errFd >= 0 ? errFd : devnull, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

std::string readLine(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    struct pollfd p = {fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return line;
    char c;
    if (read(fd, &c, 1) != 1 || c == '\n') return line;
    line += c;
  }
}

}  // namespace

std::vector<uint32_t> otherUids(size_t n) {
  std::vector<uint32_t> out;
  if (getpwuid(kNobody)) out.push_back(kNobody);
  setpwent();
  while (const passwd* pw = getpwent()) {
    if (out.size() >= n) break;
    if (pw->pw_uid != 0 && std::find(out.begin(), out.end(), pw->pw_uid) == out.end())
      out.push_back(pw->pw_uid);
  }
  endpwent();
  out.resize(std::min(out.size(), n));
  return out;
}

pid_t forkAs(uint32_t uid, const std::function<int()>& body, int outFd) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (outFd >= 0) dup2(outFd, 1);
  if (uid != 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 ||
        setresuid(uid, uid, uid) != 0) {
      _exit(125);
    }
  }
  int rc = 1;
  try {
    rc = body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child (uid %u): %s\n", uid, e.what());
  } catch (...) {
    std::fprintf(stderr, "child (uid %u): unknown exception\n", uid);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(rc);
}

int waitChild(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int st = 0;
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(2ms);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Harness::Harness(std::string sourceDir, std::string daemon)
    : sourceDir_(std::move(sourceDir)), daemonPath_(std::move(daemon)) {
  char tmpl[] = "/tmp/cxiosync-hostile.XXXXXX";
  dir_ = mkdtemp(tmpl);
  chmod(dir_.c_str(), 0755);  // other uids reach the bus socket through it
  for (const char* d : {"cg/backup.slice", "cg/system.slice", "cg/user.slice", "cg/cg1", "cg/cg2",
                        "proc", "sys", "trace", "run", "state", "config", "units"})
    fs::create_directories(dir_ / d);
  std::ofstream(dir_ / "cg/backup.slice/io.max")
      << "8:0 rbps=max wbps=1048576 riops=max wiops=max\n";
  std::ofstream(dir_ / "cg/backup.slice/memory.stat") << "file_dirty 4096\nfile_writeback 0\n";
  std::ofstream(dir_ / "cg/cgroup.controllers") << "cpu io memory pids\n";  // cgroup2 with io
  std::ofstream(dir_ / "cg/cg1/io.max") << "8:0 rbps=max wbps=2097152 riops=max wiops=max\n";
  std::ofstream(dir_ / "cg/cg2/io.max");
  fs::create_directory_symlink("backup.slice", dir_ / "cg/link.slice");
  std::ofstream(dir_ / "config/cxiosync.yaml") << "cgroups:\n  /cg2:\n    sync_isolation: off\n";
}

Harness::~Harness() {
  stopDaemon();
  stopBus();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

bool Harness::startBus() {
  const std::string conf = (dir_ / "bus.conf").string();
  std::ofstream(conf)
      << R"(<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=)"
      << (dir_ / "bus").string() << R"(</listen>
  <auth>EXTERNAL</auth>
  <limit name="max_replies_per_connection">128</limit>
  <limit name="max_message_unix_fds">16</limit>
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
    <allow send_destination="org.freedesktop.PolicyKit1"/>
  </policy>
  <policy user="root">
    <allow own="org.freedesktop.PolicyKit1"/>
  </policy>
  <include>)"
      << sourceDir_ << R"(/packaging/org.cxiosync1.conf</include>
</busconfig>
)";
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return false;
  bus_ = spawn({"/usr/bin/dbus-daemon", "--config-file=" + conf, "--print-address=1", "--nofork"},
               p[1], -1);
  close(p[1]);
  busOut_ = p[0];
  address_ = readLine(busOut_, 10s);
  if (address_.empty()) return false;
  chmod((dir_ / "bus").c_str(), 0777);
  return true;
}

void Harness::stopBus() {
  if (bus_ > 0) {
    kill(bus_, SIGTERM);
    waitpid(bus_, nullptr, 0);
  }
  bus_ = -1;
  if (busOut_ >= 0) close(busOut_);
  busOut_ = -1;
}

bool Harness::startDaemon(const std::vector<std::string>& extraArgs) {
  const std::string t = dir_.string();
  std::vector<std::string> argv = {daemonPath_,
                                   "--foreground",
                                   "--log-level=info",
                                   "--bus=" + address_,
                                   "--cgroup-root=" + t + "/cg",
                                   "--proc-root=" + t + "/proc",
                                   "--sys-root=" + t + "/sys",
                                   "--tracefs-root=" + t + "/trace",
                                   "--run-dir=" + t + "/run",
                                   "--state-dir=" + t + "/state",
                                   "--config=" + t + "/config",
                                   "--unit-root=" + t + "/units",
                                   "--detector=procfs"};
  // An extra "--name=value" replaces the default "--name=...".
  for (const auto& extra : extraArgs) {
    const auto eq = extra.find('=');
    if (eq != std::string::npos) {
      const std::string prefix = extra.substr(0, eq + 1);
      argv.erase(std::remove_if(argv.begin() + 1, argv.end(),
                                [&](const std::string& a) { return a.rfind(prefix, 0) == 0; }),
                 argv.end());
    }
    argv.push_back(extra);
  }
  int fd = open((dir_ / "daemon.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  daemon_ = spawn(argv, fd, fd);
  close(fd);
  auto client = dbus::Client::connect(dbus::BusTarget::at(address_));
  for (int i = 0; i < 400; ++i) {
    if (client->daemonRunning()) return true;
    if (waitpid(daemon_, nullptr, WNOHANG) != 0) {
      daemon_ = -1;
      return false;
    }
    std::this_thread::sleep_for(25ms);
  }
  return false;
}

int Harness::stopDaemon() {
  if (daemon_ <= 0) return -1;
  kill(daemon_, SIGTERM);
  return waitDaemon(30s);
}

int Harness::waitDaemon(std::chrono::milliseconds timeout) {
  if (daemon_ <= 0) return -1;
  int rc = waitChild(daemon_, timeout);
  daemon_ = -1;
  return rc;
}

bool Harness::daemonAlive() const {
  return daemon_ > 0 && waitpid(daemon_, nullptr, WNOHANG) == 0;
}

long Harness::fdCount() const {
  std::error_code ec;
  long n = 0;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(daemon_) + "/fd", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec))
    ++n;
  return ec ? -1 : n;
}

std::string Harness::fdList() const {
  std::string out;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(daemon_) + "/fd", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    out +=
        it->path().filename().string() + " -> " + fs::read_symlink(it->path(), e2).string() + "\n";
  }
  return out;
}

long Harness::rssKb() const {
  std::istringstream in(slurp("/proc/" + std::to_string(daemon_) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

std::map<std::string, std::string> Harness::stateSnapshot() const {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const char* top : {"run", "state", "cg"}) {
    for (auto it = fs::recursive_directory_iterator(dir_ / top, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const fs::path& p = it->path();
      if (it->is_symlink() || !it->is_regular_file()) continue;
      const std::string name = p.filename().string();
      if (name == "metrics.prom" || name.rfind(".metrics.prom", 0) == 0) continue;
      if (std::string(top) == "cg" && name != "io.max") continue;
      out[fs::relative(p, dir_).string()] = slurp(p);
    }
  }
  return out;
}

std::vector<std::string> boundLoopDevices() {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/sys/block", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("loop", 0) != 0) continue;
    std::string backing = slurp(it->path() / "loop/backing_file");
    if (!backing.empty()) out.push_back(name + "=" + backing);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace cxiosync::hostile
