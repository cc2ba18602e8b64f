// SPDX-License-Identifier: GPL-2.0-or-later
// The dbus tier against the real cxiosyncd: a private dbus-daemon, the daemon over a fake
// cgroup tree in a temp dir (procfs detector over an empty /proc), the real cxiosyncctl.
// What only the real daemon can show: the runtime policy layer persisted in the state file
// (and not with --runtime), reloaded at start, its source in `show`, reset; the cgroup
// existence check without following symlinks; Reload errors; a daemon without a bus.
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sdbus-c++/sdbus-c++.h>

#include "dbus/client.h"
#include "dbus/sdbus_compat.h"
#include "policy/bytes_text.h"
#include "tests/dbus/fake_proc.h"

namespace {

using namespace std::chrono_literals;
using namespace cxiosync;
namespace fs = std::filesystem;
using namespace cxiosync::fakeproc;
namespace compat = cxiosync::dbus::compat;

const std::string kCtl = CXIOSYNC_CTL_PATH;
const std::string kDaemon = CXIOSYNC_DAEMON_PATH;
const std::string kDir = CXIOSYNC_DBUS_TEST_DIR;

struct RunResult {
  int rc = -1;
  std::string out, err;
};

// fork+exec; stdout/stderr to the given fds (or /dev/null); the child dies with us.
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

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

RunResult run(const std::vector<std::string>& argv, const std::string& tmp) {
  const std::string o = tmp + "/run.out", e = tmp + "/run.err";
  int outFd = open(o.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int errFd = open(e.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t pid = spawn(argv, outFd, errFd);
  close(outFd);
  close(errFd);
  RunResult r;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  int st = 0;
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

bool validUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// The bus: /usr/bin/dbus-daemon, or the words of $CXIOSYNC_TEST_DBUS_DAEMON (another build of
// it, e.g. Debian 13's 1.16, which hands out ProcessFD; tests/README.md shows how).
std::vector<std::string> busArgv() {
  std::vector<std::string> argv;
  if (const char* other = getenv("CXIOSYNC_TEST_DBUS_DAEMON")) {
    std::istringstream words(other);
    for (std::string w; words >> w;) argv.push_back(w);
  }
  if (argv.empty()) argv.push_back("/usr/bin/dbus-daemon");
  // An abstract socket: any dbus-daemon on this network namespace's side reaches it.
  argv.insert(argv.end(), {"--config-file=" + kDir + "/test-bus.conf",
                           "--address=unix:abstract=cxiosync-test-" + std::to_string(getpid()) +
                               "-" + std::to_string(::time(nullptr)),
                           "--print-address=1", "--nofork"});
  return argv;
}

class RealDaemon : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::path(::testing::TempDir()) /
           ("cxiosync-daemon-bus-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(tmp_);
    for (const char* d : {"cg/backup.slice", "cg/cg1", "cg/cg2", "cg/system.slice", "proc", "sys",
                          "trace", "run", "state", "config"})
      fs::create_directories(tmp_ / d);
    // A cgroup2 root with the io controller (cxiosyncd refuses any other: issue 27).
    std::ofstream(tmp_ / "cg/cgroup.controllers") << "cpuset cpu io memory pids\n";
    std::ofstream(tmp_ / "cg/cg1/io.max") << "8:0 rbps=max wbps=1048576 riops=max wiops=max\n";
    std::ofstream(tmp_ / "cg/cg1/memory.stat") << "file_dirty 8192\nfile_writeback 4096\n";
    fs::create_directory_symlink("cg1", tmp_ / "cg/link.slice");
    std::ofstream(tmp_ / "config/cxiosync.yaml") << "cgroups:\n  /cg2:\n    sync_isolation: off\n";
    // The private bus.
    std::string addrFile = (tmp_ / "bus.address").string();
    int fd = open(addrFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bus_ = spawn(busArgv(), fd, -1);
    close(fd);
    for (int i = 0; i < 400 && address_.empty(); ++i) {
      std::string a = slurp(addrFile);
      if (a.find('\n') != std::string::npos) address_ = a.substr(0, a.find('\n'));
      std::this_thread::sleep_for(25ms);
    }
    ASSERT_FALSE(address_.empty()) << "dbus-daemon printed no address";
  }
  void TearDown() override {
    stopDaemon();
    if (bus_ > 0) {
      kill(bus_, SIGTERM);
      waitpid(bus_, nullptr, 0);
    }
    if (!HasFailure()) fs::remove_all(tmp_);
  }

  std::vector<std::string> daemonArgv(const std::string& bus) const {
    const std::string t = tmp_.string();
    return {kDaemon,
            "--foreground",
            "--log-level=info",
            "--bus=" + bus,
            "--cgroup-root=" + t + "/cg",
            "--proc-root=" + t + "/proc",
            "--sys-root=" + t + "/sys",
            "--tracefs-root=" + t + "/trace",
            "--run-dir=" + t + "/run",
            "--state-dir=" + t + "/state",
            "--config=" + t + "/config",
            "--unit-root=" + t + "/units",
            "--detector=procfs"};
  }
  std::string log() const { return slurp((tmp_ / "daemon.log").string()); }

  void startDaemon() {
    std::string logPath = (tmp_ / "daemon.log").string();
    int fd = open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    daemon_ = spawn(daemonArgv(address_), fd, fd);
    close(fd);
    auto client = dbus::Client::connect(dbus::BusTarget::at(address_));
    for (int i = 0; i < 400; ++i) {
      if (client->daemonRunning()) return;
      ASSERT_EQ(waitpid(daemon_, nullptr, WNOHANG), 0) << "cxiosyncd exited:\n" << log();
      std::this_thread::sleep_for(25ms);
    }
    FAIL() << "cxiosyncd did not take org.cxiosync1:\n" << log();
  }
  void stopDaemon() {
    if (daemon_ <= 0) return;
    kill(daemon_, SIGTERM);
    int st = 0;
    waitpid(daemon_, &st, 0);
    daemon_ = -1;
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "cxiosyncd stop:\n" << log();
  }
  RunResult ctl(std::vector<std::string> args) {
    std::vector<std::string> argv = {kCtl, "--bus=" + address_, "--no-pager"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, tmp_.string());
  }
  std::string show(const std::string& cg) { return ctl({"show", cg, "--json=short"}).out; }
  std::string stateFile() const { return slurp((tmp_ / "state/runtime-policy.json").string()); }
  std::string runFile() const { return slurp((tmp_ / "run/runtime-policy.json").string()); }

  fs::path tmp_;
  std::string address_;
  pid_t bus_ = -1, daemon_ = -1;
};

const std::string kIsoOnRuntime = R"("sync_isolation":{"value":"on","source":"runtime"})";
const std::string kIsoOffRuntime = R"("sync_isolation":{"value":"off","source":"runtime"})";

TEST_F(RealDaemon, IsolatePersistsSurvivesRestartShowsRuntimeAndResets) {
  startDaemon();
  const std::string yamlSource = R"("sync_isolation":{"value":"off","source":")" +
                                 (tmp_ / "config/cxiosync.yaml").string() + ":3";
  EXPECT_NE(show("/cg2").find(yamlSource), std::string::npos) << show("/cg2");
  auto r = ctl({"isolate", "/cg2", "on"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(show("/cg2").find(kIsoOnRuntime), std::string::npos) << show("/cg2");
  EXPECT_NE(stateFile().find("\"/cg2\""), std::string::npos) << stateFile();
  EXPECT_NE(stateFile().find("\"sync_isolation\": \"on\""), std::string::npos) << stateFile();
  // Inherited by descendants, with the source.
  fs::create_directory(tmp_ / "cg/cg2/child");
  EXPECT_NE(show("/cg2/child").find(kIsoOnRuntime), std::string::npos);

  stopDaemon();
  fs::remove_all(tmp_ / "run");  // even after a reboot
  fs::create_directory(tmp_ / "run");
  startDaemon();
  EXPECT_NE(show("/cg2").find(kIsoOnRuntime), std::string::npos) << show("/cg2") << log();
  EXPECT_NE(log().find("runtime policy: 1 cgroup(s) from"), std::string::npos) << log();

  r = ctl({"reset", "/cg2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(show("/cg2").find(yamlSource), std::string::npos) << show("/cg2");
  EXPECT_EQ(stateFile().find("/cg2"), std::string::npos) << stateFile();
  stopDaemon();
  startDaemon();
  EXPECT_NE(show("/cg2").find(yamlSource), std::string::npos) << "reset is persistent too";
}

// Audit L5: uid 0 skips polkit only with CAP_SYS_ADMIN. Root without it (a container's root
// on the host's bus) is refused before anything changes; the same call with it goes through.
TEST_F(RealDaemon, RootWithoutSysAdminChangesNothing) {
  startDaemon();
  std::vector<std::string> argv = {"/usr/bin/setpriv",
                                   "--bounding-set=-sys_admin",
                                   kCtl,
                                   "--bus=" + address_,
                                   "--no-pager",
                                   "isolate",
                                   "/cg2",
                                   "on"};
  auto r = run(argv, tmp_.string());
  EXPECT_EQ(r.rc, 4) << r.out << r.err;  // AccessDenied
  EXPECT_NE(r.err.find("root in the initial user namespace with CAP_SYS_ADMIN"), std::string::npos)
      << r.err;
  EXPECT_EQ(stateFile().find("/cg2"), std::string::npos) << stateFile();
  EXPECT_EQ(show("/cg2").find(kIsoOnRuntime), std::string::npos) << show("/cg2");
  // What was found is in the daemon's log, not in the caller's error.
  EXPECT_NE(log().find("without CAP_SYS_ADMIN"), std::string::npos) << log();
  r = ctl({"isolate", "/cg2", "on"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(show("/cg2").find(kIsoOnRuntime), std::string::npos) << show("/cg2");
}

// Issue 25 item 1: that container's root runs `unshare -Ur`: in its new user namespace CapEff
// is full and /proc shows it untranslated, and the bus still says uid 0. Refused (d4dca3e
// accepted both calls), with the same text as above, and nothing is stored.
TEST_F(RealDaemon, RootOfANewUserNamespaceChangesNothing) {
  startDaemon();
  const std::vector<std::string> container = {"/usr/bin/setpriv", "--bounding-set=-sys_admin",
                                              "--inh-caps=-sys_admin", "/usr/bin/unshare", "-Ur"};
  auto probe = container;
  probe.insert(probe.end(), {"/bin/grep", "CapEff", "/proc/self/status"});
  auto caps = run(probe, tmp_.string());
  if (caps.rc != 0) GTEST_SKIP() << "unshare -Ur does not work here: " << caps.err;
  ASSERT_NE(caps.out.find("000001ffffffffff"), std::string::npos) << "full set there: " << caps.out;

  auto cli = container;
  cli.insert(cli.end(), {kCtl, "--bus=" + address_, "--no-pager", "isolate", "/cg2", "on"});
  auto r = run(cli, tmp_.string());
  EXPECT_EQ(r.rc, 4) << r.out << r.err;  // AccessDenied
  EXPECT_NE(r.err.find("root in the initial user namespace with CAP_SYS_ADMIN"), std::string::npos)
      << r.err;
  for (const char* found : {"gone", "another user namespace", "runs as uid", "without CAP"})
    EXPECT_EQ(r.err.find(found), std::string::npos) << "names what was found: " << r.err;
  auto bus = container;
  bus.insert(bus.end(),
             {"/usr/bin/busctl", "--address=" + address_, "call", "org.cxiosync1", "/org/cxiosync1",
              "org.cxiosync1.Manager", "SetBoostPolicy", "ssa{sv}", "/cg1", "deny", "0"});
  auto b = run(bus, tmp_.string());
  EXPECT_NE(b.rc, 0) << b.out;
  EXPECT_NE(b.err.find("initial user namespace"), std::string::npos) << b.err;

  EXPECT_EQ(stateFile().find("/cg"), std::string::npos) << stateFile();
  EXPECT_EQ(show("/cg2").find(kIsoOnRuntime), std::string::npos) << show("/cg2");
  EXPECT_EQ(show("/cg1").find(R"("boost":{"value":"deny")"), std::string::npos) << show("/cg1");
  EXPECT_NE(log().find("another user namespace"), std::string::npos) << log();
}

// The bus address's abstract name ("unix:abstract=NAME,guid=...").
std::string abstractName(const std::string& address) {
  const std::string key = "unix:abstract=";
  if (address.rfind(key, 0) != 0) return {};
  std::string rest = address.substr(key.size());
  return rest.substr(0, rest.find(','));
}

// A process connects to the bus and dies; its socket lives on in us. Returns the socket, and
// the dead process's pid in *deadPid. The socket is made before the fork and shared; the
// kernel records the credentials of whoever calls connect(), the child, which leaves our user
// namespace first: a caller the daemon must not trust (root of another one, uid 0 to the bus).
int connectionOfADeadProcess(const std::string& name, pid_t* deadPid) {
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  pid_t child = ::fork();
  if (child == 0) {
    if (::unshare(CLONE_NEWUSER) != 0) _exit(2);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, name.data(), name.size());
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    _exit(::connect(s, reinterpret_cast<sockaddr*>(&a), len) == 0 ? 0 : 3);
  }
  int st = 0;
  ::waitpid(child, &st, 0);  // reaped: its pid is free
  *deadPid = child;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    ::close(s);
    return -1;
  }
  return s;
}

// A privileged root process (ours: init user namespace, every capability) with pid `pid`:
// clone3's set_tid (5.5+, needs CAP_SYS_ADMIN over the pid namespace).
pid_t privilegedProcessWithPid(pid_t pid) {
  struct clone_args args {};
  pid_t tid = pid;
  args.exit_signal = SIGCHLD;
  args.set_tid = reinterpret_cast<uintptr_t>(&tid);
  args.set_tid_size = 1;
  long r = ::syscall(SYS_clone3, &args, sizeof(args));
  if (r == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::pause();
    _exit(0);
  }
  return static_cast<pid_t>(r);
}

// Whether the bus's GetConnectionCredentials has a ProcessFD (dbus >= 1.15, dbus-broker >= 34).
bool busGivesPidfd(const std::string& address) {
  sd_bus* b = nullptr;
  sd_bus_message* reply = nullptr;
  const char* unique = nullptr;
  bool found = false;
  if (sd_bus_new(&b) >= 0 && sd_bus_set_address(b, address.c_str()) >= 0 &&
      sd_bus_set_bus_client(b, 1) >= 0 && sd_bus_start(b) >= 0 &&
      sd_bus_get_unique_name(b, &unique) >= 0 &&
      sd_bus_call_method(b, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                         "GetConnectionCredentials", nullptr, &reply, "s", unique) >= 0 &&
      sd_bus_message_enter_container(reply, 'a', "{sv}") > 0) {
    while (sd_bus_message_enter_container(reply, 'e', "sv") > 0) {
      const char* key = nullptr;
      if (sd_bus_message_read(reply, "s", &key) < 0) break;
      found = found || std::string(key) == "ProcessFD";
      if (sd_bus_message_skip(reply, "v") < 0 || sd_bus_message_exit_container(reply) < 0) break;
    }
  }
  sd_bus_message_unref(reply);
  sd_bus_unref(b);
  return found;
}

// Issue 25 item 1, second route: the caller's connection outlives the process that made it,
// and that pid is then a privileged root process's. The bus names the dead pid; only the
// pidfd it hands out with it (dbus >= 1.15, dbus-broker >= 34) tells the two apart, so the
// test needs such a bus: CXIOSYNC_TEST_DBUS_DAEMON (tests/README.md). With Debian 12's 1.14
// it skips: the daemon cannot see the reuse there (daemon/kernel/caller_privilege.h).
TEST_F(RealDaemon, AReusedPidDoesNotAnswerForTheCaller) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (clone3 set_tid)";
  startDaemon();
  if (!busGivesPidfd(address_))
    GTEST_SKIP() << "this dbus-daemon gives no ProcessFD (dbus < 1.15): a reused pid cannot "
                    "be told apart; set CXIOSYNC_TEST_DBUS_DAEMON (tests/README.md)";

  pid_t dead = 0;
  int fd = connectionOfADeadProcess(abstractName(address_), &dead);
  // dbus >= 1.15 listens on a path under unix:tmpdir= (no abstract name) where this
  // test's child cannot reach it (Debian 13 root): nothing to prove there, so skip.
  if (fd < 0) GTEST_SKIP() << "connect from a child failed (no abstract socket name?)";
  pid_t root = privilegedProcessWithPid(dead);
  ASSERT_EQ(root, dead) << "clone3 set_tid: " << strerror(errno);
  sd_bus* bus = nullptr;
  ASSERT_GE(sd_bus_new(&bus), 0);
  sd_bus_set_fd(bus, fd, fd);
  sd_bus_set_bus_client(bus, 1);
  ASSERT_GE(sd_bus_start(bus), 0);
  sd_bus_error error = SD_BUS_ERROR_NULL;
  int r = sd_bus_call_method(bus, "org.cxiosync1", "/org/cxiosync1", "org.cxiosync1.Manager",
                             "SetIsolation", &error, nullptr, "sba{sv}", "/cg2", 1, 0);
  const std::string name = error.name ? error.name : "";
  const std::string message = error.message ? error.message : "";
  sd_bus_error_free(&error);
  sd_bus_unref(bus);
  ::kill(root, SIGKILL);
  ::waitpid(root, nullptr, 0);
  EXPECT_LT(r, 0) << "accepted: the reused pid's privileged process answered for the caller";
  EXPECT_EQ(name, "org.cxiosync1.Error.AccessDenied") << message;
  EXPECT_NE(message.find("initial user namespace"), std::string::npos) << message;
  EXPECT_EQ(stateFile().find("/cg2"), std::string::npos) << stateFile();
  // dbus 1.16 reads the pid from its pidfd when asked, and names none for a dead process;
  // a bus that still names the pid gets "pidfd process exited" from the daemon's check.
  EXPECT_NE(log().find("uid 0 not trusted as root"), std::string::npos) << log();
}

// `cxiosyncctl tenant` through the real daemon (issue 15): stored like the other knobs, shown on
// the cgroup itself only, and the built-in user@UID.service boundary shows as the default.
TEST_F(RealDaemon, TenantIsStoredShownOnItsCgroupOnlyAndDefaultsForUserManagers) {
  fs::create_directories(tmp_ / "cg/cg1/inner");
  fs::create_directories(tmp_ / "cg/user.slice/user-1000.slice/user@1000.service/app.slice");
  startDaemon();
  auto r = ctl({"tenant", "/cg1", "on", "--json=short"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(R"("knob":"tenant","value":"on")"), std::string::npos) << r.out;
  EXPECT_NE(show("/cg1").find(R"("tenant":{"value":"on","source":"runtime"})"), std::string::npos)
      << show("/cg1");
  EXPECT_NE(show("/cg1/inner").find(R"("tenant":{"value":"off","source":"default"})"),
            std::string::npos)
      << show("/cg1/inner");
  EXPECT_NE(stateFile().find("\"tenant\": \"on\""), std::string::npos) << stateFile();
  const std::string user = "/user.slice/user-1000.slice/user@1000.service";
  EXPECT_NE(show(user).find(R"("tenant":{"value":"on","source":"default"})"), std::string::npos)
      << show(user);
  ASSERT_EQ(ctl({"tenant", user, "off", "--runtime"}).rc, 0);
  EXPECT_NE(show(user).find(R"("tenant":{"value":"off","source":"runtime"})"), std::string::npos)
      << show(user);
  EXPECT_EQ(ctl({"tenant", "/cg1", "perhaps"}).rc, 2);
  EXPECT_EQ(ctl({"tenant", "/nope", "on"}).rc, 1);
}

TEST_F(RealDaemon, RuntimeChangesStayInTheRunDir) {
  startDaemon();
  ASSERT_EQ(ctl({"isolate", "/cg2", "on", "--runtime"}).rc, 0);
  ASSERT_EQ(ctl({"boost", "/cg1", "deny", "--runtime"}).rc, 0);
  ASSERT_EQ(ctl({"ceiling", "/cg1", "10Mi"}).rc, 0);  // persistent
  EXPECT_NE(show("/cg2").find(kIsoOnRuntime), std::string::npos);
  auto cg1 = show("/cg1");
  EXPECT_NE(cg1.find(R"("boost":{"value":"deny","source":"runtime"})"), std::string::npos) << cg1;
  EXPECT_NE(cg1.find(R"("boost_ceiling":{"value":"10485760","source":"runtime"})"),
            std::string::npos)
      << cg1;
  EXPECT_EQ(stateFile().find("/cg2"), std::string::npos) << stateFile();
  EXPECT_EQ(stateFile().find("\"boost\""), std::string::npos) << stateFile();
  EXPECT_NE(stateFile().find("boost_ceiling"), std::string::npos) << stateFile();
  EXPECT_NE(runFile().find("/cg2"), std::string::npos) << runFile();

  // Daemon restart within the same boot: /run is kept, so is the --runtime setting.
  stopDaemon();
  startDaemon();
  EXPECT_NE(show("/cg2").find(kIsoOnRuntime), std::string::npos) << show("/cg2");
  // A reboot empties /run: the --runtime settings are gone, the persistent one stays.
  stopDaemon();
  fs::remove_all(tmp_ / "run");
  fs::create_directory(tmp_ / "run");
  startDaemon();
  EXPECT_EQ(show("/cg2").find("runtime"), std::string::npos) << show("/cg2");
  cg1 = show("/cg1");
  EXPECT_NE(cg1.find(R"("boost":{"value":"allow","source":"default"})"), std::string::npos) << cg1;
  EXPECT_NE(cg1.find(R"("boost_ceiling":{"value":"10485760","source":"runtime"})"),
            std::string::npos)
      << cg1;

  // A persistent change replaces a --runtime value of the same knob (the latest change wins).
  ASSERT_EQ(ctl({"isolate", "/cg2", "off", "--runtime"}).rc, 0);
  ASSERT_EQ(ctl({"isolate", "/cg2", "on"}).rc, 0);
  EXPECT_NE(show("/cg2").find(kIsoOnRuntime), std::string::npos) << show("/cg2");
  EXPECT_EQ(runFile().find("/cg2"), std::string::npos) << runFile();
}

TEST_F(RealDaemon, ShowReportsLimitsHoldersAndPageCache) {
  fs::create_directory(tmp_ / "cg/cg1/inner");
  startDaemon();
  auto j = show("/cg1/inner");
  EXPECT_NE(j.find(R"("wbps_holder":"/cg1")"), std::string::npos) << j;
  j = show("/cg1");
  EXPECT_NE(j.find("1048576"), std::string::npos) << j;
  EXPECT_NE(j.find("8192"), std::string::npos) << j;
  auto list = ctl({"list"});
  EXPECT_EQ(list.rc, 0) << list.err;
  EXPECT_NE(list.out.find("/cg1"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("1 MiB/s (8:0)"), std::string::npos) << list.out;
  auto m = ctl({"metrics"});
  EXPECT_EQ(m.rc, 0);
  EXPECT_NE(m.out.find("cxiosync_detector_info{detector=\"procfs\"} 1"), std::string::npos)
      << m.out;
  auto st = ctl({"status", "--json=short"});
  EXPECT_EQ(st.rc, 0);
  EXPECT_NE(st.out.find("\"detector\":\"procfs\""), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("cxiosync.yaml"), std::string::npos) << st.out;
}

TEST_F(RealDaemon, MissingCgroupsAndSymlinksAreNoSuchCgroupAndChangeNothing) {
  startDaemon();
  const std::string before = stateFile() + runFile() + show("/cg1");
  for (const char* cg : {"/nope", "/link.slice", "/cg1/io.max", "/link.slice/x"}) {
    SCOPED_TRACE(cg);
    auto r = ctl({"isolate", cg, "on"});
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_NE(r.err.find("No cgroup"), std::string::npos) << r.err;
    EXPECT_EQ(ctl({"show", cg}).rc, 1);
    EXPECT_EQ(ctl({"boost", cg, "deny", "--runtime"}).rc, 1);
    EXPECT_EQ(ctl({"reset", cg}).rc, 1);
  }
  EXPECT_EQ(ctl({"isolate", "../cg1", "on"}).rc, 2);
  EXPECT_EQ(stateFile() + runFile() + show("/cg1"), before);
}

// [X-CxIOSync] drop-ins below --unit-root (the standard-conf search path, no systemd here):
// `show backup.slice` names the file:line, a slice's child inherits it, an edit applies
// without a reload, a broken edit keeps the previous value, a runtime change wins.
TEST_F(RealDaemon, SliceDropInsShowTheirFileAndLineAndApplyWhenEdited) {
  const fs::path dir = tmp_ / "units/etc/systemd/system/backup.slice.d";
  fs::create_directories(dir);
  const std::string file = (dir / "70-cxiosync.conf").string();
  std::ofstream(file) << "[Slice]\nCPUWeight=10\n\n[X-CxIOSync]\nBoost=deny\n";
  fs::create_directory(tmp_ / "cg/backup.slice/job.service");
  startDaemon();
  const std::string deny = R"("boost":{"value":"deny","source":")" + file + ":5\"";
  EXPECT_NE(show("backup.slice").find(deny), std::string::npos) << show("backup.slice") << log();
  EXPECT_NE(show("/backup.slice/job.service").find(deny), std::string::npos);
  auto text = ctl({"show", "backup.slice"});
  EXPECT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find(file + ":5"), std::string::npos) << text.out;

  auto waitFor = [&](const std::string& needle) {
    for (int i = 0; i < 100; ++i) {
      if (show("backup.slice").find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  };
  std::ofstream(file) << "[X-CxIOSync]\nBoost=allow\nMaxBoostSec=2min\n";
  const std::string allow = R"("boost":{"value":"allow","source":")" + file + ":2\"";
  EXPECT_TRUE(waitFor(allow)) << show("backup.slice") << log();
  EXPECT_NE(
      show("backup.slice").find(R"("max_boost_seconds":{"value":"120","source":")" + file + ":3\""),
      std::string::npos)
      << show("backup.slice");
  EXPECT_NE(log().find("action=dropin unit=backup.slice"), std::string::npos) << log();

  std::ofstream(file) << "[X-CxIOSync]\nBoost=sometimes\n";
  for (int i = 0; i < 100 && log().find("action=dropin-error") == std::string::npos; ++i)
    std::this_thread::sleep_for(50ms);
  EXPECT_NE(log().find(file + ":2: [X-CxIOSync] Boost:"), std::string::npos) << log();
  EXPECT_NE(show("backup.slice").find(allow), std::string::npos) << "the last good value stays";

  ASSERT_EQ(ctl({"boost", "backup.slice", "deny", "--runtime"}).rc, 0);
  EXPECT_NE(show("backup.slice").find(R"("boost":{"value":"deny","source":"runtime"})"),
            std::string::npos);
}

TEST_F(RealDaemon, ReloadAppliesAndABadConfigIsRefusedWithItsLocation) {
  startDaemon();
  std::ofstream(tmp_ / "config/cxiosync.yaml") << "cgroups:\n  /cg2:\n    sync_isolation: on\n";
  auto r = ctl({"reload"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(show("/cg2").find(R"("sync_isolation":{"value":"on","source":")"), std::string::npos);
  std::ofstream(tmp_ / "config/cxiosync.yaml") << "cgroups:\n  /cg2:\n    boost: maybe\n";
  r = ctl({"reload"});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("cxiosync.yaml:3"), std::string::npos) << r.err;
  EXPECT_NE(show("/cg2").find(R"("sync_isolation":{"value":"on","source":")"), std::string::npos)
      << "the old configuration stays";
}

TEST_F(RealDaemon, SighupReloadAnnouncesPolicyChanged) {
  startDaemon();
  const std::string monPath = (tmp_ / "monitor.out").string();
  int fd = open(monPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t mon = spawn({kCtl, "--bus=" + address_, "monitor", "--json=short"}, fd, fd);
  close(fd);
  for (int i = 0; i < 400 && slurp(monPath).find("Monitoring") == std::string::npos; ++i)
    std::this_thread::sleep_for(25ms);
  ASSERT_NE(slurp(monPath).find("Monitoring"), std::string::npos) << slurp(monPath);
  kill(daemon_, SIGHUP);
  const std::string want = R"("event":"PolicyChanged")";
  for (int i = 0; i < 400 && slurp(monPath).find(want) == std::string::npos; ++i)
    std::this_thread::sleep_for(25ms);
  kill(mon, SIGINT);
  waitpid(mon, nullptr, 0);
  const std::string out = slurp(monPath);
  EXPECT_NE(out.find(want), std::string::npos) << out;
  EXPECT_NE(out.find(R"("source":"config")"), std::string::npos) << out;
}

TEST_F(RealDaemon, CorruptStateFileIsMovedAsideNotFatal) {
  std::ofstream(tmp_ / "state/runtime-policy.json") << "{\"version\":1,\"cgroups\":{\"/a\":{\"bo";
  startDaemon();
  EXPECT_NE(log().find("moved aside"), std::string::npos) << log();
  EXPECT_EQ(ctl({"isolate", "/cg2", "on"}).rc, 0);
  EXPECT_NE(stateFile().find("/cg2"), std::string::npos);
}

// A setting that cannot be read (a newer daemon's knob, a bad value) is skipped with a
// warning; the rest of the file applies.
TEST_F(RealDaemon, UnreadableStateEntryIsSkippedNotFatal) {
  std::ofstream(tmp_ / "state/runtime-policy.json")
      << "{\"version\":2,\"cgroups\":{\"/a\":{\"boost\":\"maybe\"},"
         "\"/cg2\":{\"sync_isolation\":\"off\"}}}";
  startDaemon();
  EXPECT_NE(log().find("skipped"), std::string::npos) << log();
  EXPECT_EQ(log().find("moved aside"), std::string::npos) << log();
  EXPECT_NE(stateFile().find("/cg2"), std::string::npos) << "still in place";
  EXPECT_EQ(ctl({"isolate", "/cg2", "on"}).rc, 0);
  EXPECT_EQ(stateFile().find("maybe"), std::string::npos) << "rewritten without it";
}

// Issue 16, bug A: a cgroup named $'\xff' (any user can make one in a delegated subtree) and
// a syncer whose comm is $'\xff' made ListCgroups, ListSyncers, ListBoosts and the signals
// fail for every caller ("Failed to serialize a string value") and metrics.prom unparsable.
// Now every one answers, with the bytes as \xNN text, and the escaped name works as input.
TEST_F(RealDaemon, NamesThatAreNotUtf8ComeBackEscapedEverywhere) {
  const std::string ff = "\xff";
  fs::create_directory(tmp_ / "cg" / ff);
  // 14 bytes: the boost this test provokes writes "8:0 wbps=max\n" over it without truncating
  // (a cgroup file needs none; this plain file is left with a blank line, which parses).
  std::ofstream(tmp_ / "cg" / ff / "io.max") << "8:0 wbps=1000\n";
  std::ofstream(tmp_ / "cg" / ff / "memory.stat") << "file_dirty 536870912\nfile_writeback 0\n";
  startDaemon();
  const std::string monPath = (tmp_ / "monitor.out").string();
  int fd = open(monPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t mon = spawn({kCtl, "--bus=" + address_, "monitor", "--json=short"}, fd, fd);
  close(fd);
  for (int i = 0; i < 400 && slurp(monPath).find("Monitoring") == std::string::npos; ++i)
    std::this_thread::sleep_for(25ms);
  ASSERT_NE(slurp(monPath).find("Monitoring"), std::string::npos) << slurp(monPath);
  // A foreign sync(2) from /system.slice by a thread named $'\xff'.
  addProcThread(tmp_ / "proc", 4242, ff, 'D', kSyncNr, "/system.slice");

  auto client = dbus::Client::connect(dbus::BusTarget::at(address_));
  // Runs a call; its error, the first one if it failed more than once, goes to `err`.
  auto attempt = [](auto call, std::string& err) {
    try {
      return call();
    } catch (const dbus::ClientError& e) {
      if (err.empty()) err = e.name() + ": " + e.what();
      return decltype(call()){};
    }
  };
  std::string err;
  std::vector<dbus::SyncerView> syncers;
  for (int i = 0; i < 200 && syncers.empty(); ++i) {
    syncers = attempt([&] { return client->listSyncers(); }, err);
    if (syncers.empty()) std::this_thread::sleep_for(25ms);
  }
  ASSERT_EQ(syncers.size(), 1u) << "ListSyncers: " << err << "\n" << log();
  EXPECT_EQ(syncers[0].tid, 4242);
  EXPECT_EQ(syncers[0].comm, "\\xff");
  EXPECT_EQ(syncers[0].cgroup, "/system.slice");

  err.clear();
  auto cgroups = attempt([&] { return client->listCgroups(); }, err);
  EXPECT_EQ(err, "") << "ListCgroups";
  bool listed = false;
  for (const auto& c : cgroups) listed = listed || c.path == "/\\xff";
  EXPECT_TRUE(listed) << "ListCgroups lacks /\\xff";

  // The escaped form names the cgroup, over D-Bus and in cxiosyncctl.
  err.clear();
  auto shown =
      attempt([&] { return std::vector<dbus::CgroupView>{client->showCgroup("/\\xff")}; }, err);
  ASSERT_EQ(shown.size(), 1u) << "ShowCgroup: " << err;
  EXPECT_EQ(shown[0].path, "/\\xff");
  ASSERT_EQ(shown[0].ioMax.size(), 1u);
  EXPECT_EQ(shown[0].ioMax[0].device, "8:0");
  auto r = ctl({"show", "/\\xff"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("/\\xff"), std::string::npos) << r.out;
  r = ctl({"list"});
  EXPECT_EQ(r.rc, 0) << r.err;
  r = ctl({"isolate", "/\\xff", "on", "--runtime"});
  EXPECT_EQ(r.rc, 0) << r.err;

  // The foreign sync waits on /\xff's dirty pages under its 1000 B/s limit: a boost.
  std::vector<dbus::BoostView> boosts;
  err.clear();
  for (int i = 0; i < 200 && boosts.empty(); ++i) {
    boosts = attempt([&] { return client->listBoosts(); }, err);
    if (boosts.empty()) std::this_thread::sleep_for(25ms);
  }
  ASSERT_EQ(boosts.size(), 1u) << "ListBoosts: " << err << "\n" << log();
  EXPECT_EQ(boosts[0].cgroup, "/\\xff");
  EXPECT_EQ(boosts[0].dirtier, "/\\xff");
  EXPECT_TRUE(validUtf8(boosts[0].reason)) << boosts[0].reason;

  // Metrics: over D-Bus and in metrics.prom, label values are text.
  std::string metrics;
  try {
    metrics = client->metrics();
  } catch (const dbus::ClientError& e) {
    ADD_FAILURE() << "GetMetrics: " << e.name() << ": " << e.what();
  }
  EXPECT_NE(metrics.find(R"(cxiosync_cgroup_dirty_bytes{cgroup="/\\xff"} 536870912)"),
            std::string::npos)
      << metrics;
  const std::string prom = (tmp_ / "run/metrics.prom").string();
  for (int i = 0; i < 200 && slurp(prom).find("\\\\xff") == std::string::npos; ++i)
    std::this_thread::sleep_for(25ms);
  EXPECT_TRUE(validUtf8(slurp(prom)));
  EXPECT_NE(slurp(prom).find(R"({cgroup="/\\xff"})"), std::string::npos) << slurp(prom);

  // The signal arrived, with the comm escaped (JSON then doubles the backslash).
  const std::string want = R"("event":"SyncDetected","comm":"\\xff")";
  for (int i = 0; i < 200 && slurp(monPath).find(want) == std::string::npos; ++i)
    std::this_thread::sleep_for(25ms);
  kill(mon, SIGINT);
  waitpid(mon, nullptr, 0);
  EXPECT_NE(slurp(monPath).find(want), std::string::npos) << slurp(monPath);
  EXPECT_EQ(waitpid(daemon_, nullptr, WNOHANG), 0) << "cxiosyncd still running";
}

// Issue 16, bug B: input cut at byte 64 inside an 'é' made an error message that was not
// UTF-8; sd-bus dropped the error reply and the caller waited 25 s. Each call is answered at
// once with the documented error; the daemon answers the next call as well.
TEST_F(RealDaemon, NonAsciiInputIsAnsweredAtOnceWithInvalidArgument) {
  startDaemon();
  using Opts = std::map<std::string, sdbus::Variant>;
  auto conn = sdbus::createSessionBusConnectionWithAddress(address_);
  auto proxy = compat::createProxy(*conn, "org.cxiosync1", "/org/cxiosync1");
  std::string e40;
  for (int i = 0; i < 40; ++i) e40 += "\xc3\xa9";
  const std::string path = "/" + e40 + "/..";
  const std::string key = std::string(63, 'k') + "\xc3\xa9";
  auto timed = [&](const char* what, auto&& call) {
    SCOPED_TRACE(what);
    const auto t0 = std::chrono::steady_clock::now();
    std::string name, message;
    try {
      call();
    } catch (const sdbus::Error& e) {
      name = e.getName();
      message = e.getMessage();
    }
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(name, "org.cxiosync1.Error.InvalidArgument") << message;
    EXPECT_LT(took, 1s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                        << " ms";
    EXPECT_TRUE(validUtf8(message));
  };
  // sdbus-c++ sends the call when the invoker (a temporary) goes: one statement per call.
  const char* kIface = "org.cxiosync1.Manager";
  timed("ShowCgroup", [&] {
    proxy->callMethod("ShowCgroup").onInterface(kIface).withTimeout(3s).withArguments(path, Opts{});
  });
  timed("GetStatus", [&] {
    proxy->callMethod("GetStatus")
        .onInterface(kIface)
        .withTimeout(3s)
        .withArguments(Opts{{key, sdbus::Variant(true)}});
  });
  timed("SetIsolation", [&] {
    proxy->callMethod("SetIsolation")
        .onInterface(kIface)
        .withTimeout(3s)
        .withArguments(path, true, Opts{});
  });
  timed("ResetPolicy option", [&] {
    proxy->callMethod("ResetPolicy")
        .onInterface(kIface)
        .withTimeout(3s)
        .withArguments(std::string("/cg1"), Opts{{key, sdbus::Variant(true)}});
  });
  std::map<std::string, sdbus::Variant> status;
  EXPECT_NO_THROW(proxy->callMethod("GetStatus")
                      .onInterface(kIface)
                      .withTimeout(3s)
                      .withArguments(Opts{})
                      .storeResultsTo(status));
  EXPECT_FALSE(status.empty());
}

TEST_F(RealDaemon, RunsWithoutABus) {
  std::string logPath = (tmp_ / "daemon.log").string();
  int fd = open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  daemon_ = spawn(daemonArgv("unix:path=" + tmp_.string() + "/no-such-bus"), fd, fd);
  close(fd);
  for (int i = 0; i < 200 && log().find("cxiosyncd ready") == std::string::npos; ++i)
    std::this_thread::sleep_for(25ms);
  EXPECT_NE(log().find("D-Bus API unavailable"), std::string::npos) << log();
  EXPECT_NE(log().find("cxiosyncd ready"), std::string::npos) << log();
  EXPECT_EQ(waitpid(daemon_, nullptr, WNOHANG), 0) << "still running";
  stopDaemon();
}

// Issue 27 item 2: a host where nothing can work is refused at start, before the bus name and
// "ready": one line naming the fix, exit 5 (kExitUnsupported, not restarted by the unit), and
// STATUS= for systemd. On the old code the daemon said "ready" over a hybrid layout and
// `list` showed the v1 hierarchies as cgroups.
TEST_F(RealDaemon, RefusesAHostWithoutTheCgroup2IoControllerOrAForcedTracefs) {
  // sd_notify's socket, as systemd passes it.
  const std::string sock = (tmp_ / "notify").string();
  int nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ASSERT_GE(nfd, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock.c_str());
  ASSERT_EQ(bind(nfd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  setenv("NOTIFY_SOCKET", sock.c_str(), 1);
  auto refused = [&](std::vector<std::string> extra, const std::string& why) {
    SCOPED_TRACE(why);
    auto argv = daemonArgv(address_);
    for (const auto& e : extra) {
      const std::string prefix = e.substr(0, e.find('=') + 1);
      std::erase_if(argv, [&](const std::string& a) { return a.rfind(prefix, 0) == 0; });
      argv.push_back(e);
    }
    auto r = run(argv, tmp_.string());
    EXPECT_EQ(r.rc, 5) << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    char buf[4096];
    ssize_t n = recv(nfd, buf, sizeof buf, 0);
    std::string msg = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    EXPECT_EQ(msg.rfind("STATUS=cannot start: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
    EXPECT_EQ(msg.find("READY=1"), std::string::npos) << msg;
    auto client = dbus::Client::connect(dbus::BusTarget::at(address_));
    EXPECT_FALSE(client->daemonRunning());
    return r.err;
  };
  const std::string fix = "boot with systemd.unified_cgroup_hierarchy=1";
  // This host's own /sys/fs/cgroup, when it is hybrid or legacy (the dev host is).
  std::ifstream real("/sys/fs/cgroup/cgroup.controllers");
  std::string controllers;
  std::getline(real, controllers);
  if (!real || (" " + controllers + " ").find(" io ") == std::string::npos) {
    std::string err = refused({"--cgroup-root=/sys/fs/cgroup"}, fix);
    if (fs::is_directory("/sys/fs/cgroup/unified")) {
      EXPECT_NE(err.find("hybrid cgroup layout"), std::string::npos) << err;
    }
  } else {
    std::cout << "(this host has cgroup2 with io at /sys/fs/cgroup: that case not run)\n";
  }
  // A tree without cgroup.controllers (not cgroup2), and one where io is not available.
  fs::remove(tmp_ / "cg/cgroup.controllers");
  refused({}, "not a cgroup2 mount; " + fix);
  std::ofstream(tmp_ / "cg/cgroup.controllers") << "cpuset cpu memory pids\n";
  refused({}, "'cpuset cpu memory pids'");
  std::ofstream(tmp_ / "cg/cgroup.controllers") << "cpuset cpu io memory pids\n";
  // detector tracefs forced, and no tracefs at --tracefs-root (an empty directory).
  refused({"--detector=tracefs"},
          "detector: tracefs, but no tracefs at " + tmp_.string() + "/trace");
  unsetenv("NOTIFY_SOCKET");
  close(nfd);
  // With io listed, the same tree starts.
  startDaemon();
  EXPECT_EQ(ctl({"status"}).rc, 0);
}

// `cxiosyncd --check-config PATH` as documented (it said "unexpected argument"), and the same
// exit status as `cxiosyncctl check-config` for the same invalid file (6; cxiosyncctl said 1).
TEST_F(RealDaemon, CheckConfigTakesAPathAndAgreesWithCxiosyncctl) {
  const std::string good = (tmp_ / "config/cxiosync.yaml").string();
  auto r = run({kDaemon, "--check-config", good}, tmp_.string());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(good), std::string::npos) << r.out;
  r = run({kDaemon, "--check-config", (tmp_ / "config").string()}, tmp_.string());
  EXPECT_EQ(r.rc, 0) << r.err;
  const std::string bad = (tmp_ / "bad.yaml").string();
  std::ofstream(bad) << "cgroups:\n  /cg2:\n    boost: maybe\n";
  auto d = run({kDaemon, "--check-config", bad}, tmp_.string());
  auto c = run({kCtl, "check-config", bad}, tmp_.string());
  EXPECT_EQ(d.rc, 6) << d.err;
  EXPECT_EQ(c.rc, d.rc) << c.err;
  EXPECT_NE(c.err.find("invalid value 'maybe'"), std::string::npos) << c.err;
  const std::string missing = (tmp_ / "nope.yaml").string();
  EXPECT_EQ(run({kCtl, "check-config", missing}, tmp_.string()).rc,
            run({kDaemon, "--check-config", missing}, tmp_.string()).rc);
  // A positional argument is only the --check-config PATH; two paths are a usage error.
  EXPECT_EQ(run({kDaemon, good}, tmp_.string()).rc, 2);
  EXPECT_EQ(run({kDaemon, "--check-config", "--config=" + good, good}, tmp_.string()).rc, 2);
  // No /etc/cxiosync: the daemon starts on the built-in defaults, so the check says OK.
  if (!fs::exists("/etc/cxiosync")) {
    r = run({kDaemon, "--check-config"}, tmp_.string());
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("built-in defaults"), std::string::npos) << r.out;
  } else {
    std::cout << "(/etc/cxiosync exists here: the no-config case not run)\n";
  }
}

}  // namespace
