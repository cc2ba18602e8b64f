// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/nbd/nbd_device.h"

#include <fcntl.h>
#include <linux/nbd.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

namespace cxiosync::nbd {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::optional<std::string> readSmall(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  UniqueFd f(fd);
  auto r = readAll(f.get(), path);
  if (!r) return std::nullopt;
  return trim(*r);
}

uint64_t toU64(const std::optional<std::string>& s) {
  if (!s) return 0;
  uint64_t v = 0;
  for (char c : *s) {
    if (c < '0' || c > '9') break;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

int xioctl(int fd, unsigned long req, unsigned long arg) {
  int r;
  do {
    r = ::ioctl(fd, req, arg);
  } while (r < 0 && errno == EINTR);
  return r;
}

// After fork in a threaded daemon only async-signal-safe calls: a status line for
// spawnServer ("error ERRNO cgroup: MESSAGE"), built without allocating.
void childError(int fd, int err, const char* msg) {
  char num[16];
  int n = 0;
  unsigned v = static_cast<unsigned>(err);
  do {
    num[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v && n < 15);
  char out[24] = "error ";
  int k = 6;
  while (n) out[k++] = num[--n];
  out[k++] = ' ';
  (void)!::write(fd, out, static_cast<size_t>(k));
  (void)!::write(fd, "cgroup: ", 8);
  (void)!::write(fd, msg, ::strlen(msg));
  (void)!::write(fd, "\n", 1);
}

// The server process: in o.cgroupFd's cgroup when given (see SpawnOptions), else a plain
// fork. Returns as fork does; -1 after reporting the error on `statusFd`.
pid_t forkServer(int cgroupFd, int statusFd, const char* cloneMsg, const char* procsMsg) {
  if (cgroupFd < 0) return ::fork();
#ifdef CLONE_INTO_CGROUP
  struct clone_args ca {};
  ca.flags = CLONE_INTO_CGROUP;
  ca.exit_signal = SIGCHLD;
  ca.cgroup = static_cast<uint64_t>(cgroupFd);
  long g = ::syscall(SYS_clone3, &ca, sizeof ca);
  if (g >= 0) return static_cast<pid_t>(g);
  const int e = errno;
  if (e != ENOSYS && e != EINVAL && e != E2BIG && e != EPERM) {
    childError(statusFd, e, cloneMsg);
    return -1;
  }
#endif
  pid_t p = ::fork();
  if (p != 0) return p;
  int procs = ::openat(cgroupFd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
  if (procs < 0 || ::write(procs, "0", 1) != 1) {
    childError(statusFd, errno, procsMsg);
    ::_exit(1);
  }
  ::close(procs);
  return 0;
}

Error ioctlErr(const char* what) {
  int e = errno;
  return makeError(std::string(what) + ": " + std::strerror(e), e);
}

}  // namespace

Result<std::vector<int>> listDevices(const std::string& sysRoot) {
  const std::string dir = sysRoot + "/block";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sysError(errno, "open", dir);
  UniqueFd f(fd);
  auto entries = listDir(f.get(), ".", dir, Resolve::Follow);
  if (!entries) return entries.error();
  std::vector<int> out;
  for (const auto& e : *entries) {
    if (e.name.rfind("nbd", 0) != 0) continue;
    int64_t n = parseDecimalName(std::string_view(e.name).substr(3));
    if (n >= 0 && n < (1 << 20)) out.push_back(static_cast<int>(n));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<DeviceState> readDevice(const std::string& sysRoot, int index) {
  const std::string dir = sysRoot + "/block/nbd" + std::to_string(index) + "/";
  DeviceState s;
  s.index = index;
  if (!readSmall(dir + "dev"))
    return makeError("nbd" + std::to_string(index) + " does not exist", ENOENT);
  auto pid = readSmall(dir + "pid");
  s.connected = pid.has_value();
  s.kernelPid = static_cast<int>(toU64(pid));
  s.sizeBytes = toU64(readSmall(dir + "size")) * 512;
  s.readOnly = toU64(readSmall(dir + "ro")) != 0;
  s.logicalBlockSize = static_cast<uint32_t>(toU64(readSmall(dir + "queue/logical_block_size")));
  s.requestDepth = static_cast<uint32_t>(toU64(readSmall(dir + "queue/nr_requests")));
  const std::string mq = dir + "mq";
  if (int fd = ::open(mq.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    UniqueFd f(fd);
    if (auto e = listDir(f.get(), ".", mq, Resolve::Follow))
      s.connections = static_cast<int>(e->size());
  }
  return s;
}

bool isFree(const DeviceState& s) {
  return !s.connected && s.sizeBytes == 0;
}

Status configureDevice(int nbdFd, const std::vector<int>& kernelSocks, const AttachOptions& o) {
  if (kernelSocks.empty()) return makeError("no connections", EINVAL);
  // The first SET_SOCK claims the device for this thread (EBUSY: someone else's).
  for (int s : kernelSocks)
    if (xioctl(nbdFd, NBD_SET_SOCK, static_cast<unsigned long>(s)) < 0)
      return ioctlErr("NBD_SET_SOCK");
  if (xioctl(nbdFd, NBD_SET_BLKSIZE, o.blockSize) < 0) return ioctlErr("NBD_SET_BLKSIZE");
  if (xioctl(nbdFd, NBD_SET_SIZE, o.sizeBytes) < 0) return ioctlErr("NBD_SET_SIZE");
  if (xioctl(nbdFd, NBD_SET_TIMEOUT, o.timeoutSec) < 0) return ioctlErr("NBD_SET_TIMEOUT");
  if (xioctl(nbdFd, NBD_SET_FLAGS, o.flags) < 0) return ioctlErr("NBD_SET_FLAGS");
  return Ok{};
}

Status disconnectFd(int nbdFd) {
  Status st = Ok{};
  if (xioctl(nbdFd, NBD_DISCONNECT, 0) < 0) st = ioctlErr("NBD_DISCONNECT");
  (void)xioctl(nbdFd, NBD_CLEAR_SOCK, 0);
  return st;
}

std::string defaultServerPath() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    std::string self(buf, static_cast<size_t>(n));
    auto slash = self.rfind('/');
    std::string cand = self.substr(0, slash + 1) + kServerName;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return std::string("/usr/libexec/cxiosync/") + kServerName;
}

std::string formatReady(const SpawnResult& r) {
  std::ostringstream o;
  o << "ready index=" << r.index << " pid=" << r.pid << " dio=" << (r.directIo ? 1 : 0)
    << " flusher=" << r.ioFlusherThreads << " conns=" << r.connections << " bs=" << r.blockSize
    << " size=" << r.sizeBytes;
  return o.str();
}

std::optional<SpawnResult> parseReady(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  if (!(in >> word) || word != "ready") return std::nullopt;
  SpawnResult r;
  bool haveIndex = false, havePid = false;
  while (in >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string k = word.substr(0, eq);
    const std::string v = word.substr(eq + 1);
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const uint64_t n = std::stoull(v);
    if (k == "index") {
      r.index = static_cast<int>(n);
      haveIndex = true;
    } else if (k == "pid") {
      r.pid = static_cast<pid_t>(n);
      havePid = true;
    } else if (k == "dio") {
      r.directIo = n != 0;
    } else if (k == "flusher") {
      r.ioFlusherThreads = static_cast<int>(n);
    } else if (k == "conns") {
      r.connections = static_cast<int>(n);
    } else if (k == "bs") {
      r.blockSize = static_cast<uint32_t>(n);
    } else if (k == "size") {
      r.sizeBytes = n;
    }
  }
  if (!haveIndex || !havePid || r.pid <= 0) return std::nullopt;
  r.device = "/dev/nbd" + std::to_string(r.index);
  return r;
}

Result<SpawnResult> spawnServer(const SpawnOptions& o) {
  const std::string server = o.serverPath.empty() ? defaultServerPath() : o.serverPath;
  if (::access(server.c_str(), X_OK) != 0)
    return makeError(
        server + ": " + std::strerror(errno) + " (the nbd backend needs " + kServerName + ")",
        ENOENT);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return sysError(errno, "pipe2", "");
  UniqueFd rd(p[0]), wr(p[1]);
  int logFd = o.logPath.empty()
                  ? ::open("/dev/null", O_WRONLY | O_CLOEXEC)
                  : ::open(o.logPath.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  UniqueFd log(logFd);
  std::vector<std::string> args = {server,
                                   "--backing-fd",
                                   "3",
                                   "--status-fd",
                                   "4",
                                   "--workers",
                                   std::to_string(o.workers),
                                   "--timeout",
                                   std::to_string(o.timeoutSec),
                                   "--sys-root",
                                   o.sysRoot,
                                   "--dev-root",
                                   o.devRoot,
                                   std::string("--direct-io=") + (o.directIo ? "auto" : "off")};
  if (o.readOnly) args.push_back("--read-only");
  if (o.blockSize) {
    args.push_back("--block-size");
    args.push_back(std::to_string(o.blockSize));
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string cloneMsg =
      "cannot start the server in cgroup " + o.cgroupPath + " (clone3 CLONE_INTO_CGROUP)";
  const std::string procsMsg =
      "cannot move the server into cgroup " + o.cgroupPath + " (write to cgroup.procs)";

  pid_t child = ::fork();
  if (child < 0) return sysError(errno, "fork", "");
  if (child == 0) {
    // Intermediate: new session, then the server as a grandchild, so the server is nobody's
    // child here (no zombie in the daemon) and survives the daemon.
    ::setsid();
    pid_t g = forkServer(o.cgroupFd, wr.get(), cloneMsg.c_str(), procsMsg.c_str());
    if (g != 0) ::_exit(g < 0 ? 1 : 0);
    // fds 3 and 4 for the server: move everything out of the way first.
    int b = ::fcntl(o.backingFd, F_DUPFD_CLOEXEC, 10);
    int w = ::fcntl(wr.get(), F_DUPFD_CLOEXEC, 10);
    int l = log.valid() ? ::fcntl(log.get(), F_DUPFD_CLOEXEC, 10) : -1;
    if (b < 0 || w < 0) ::_exit(126);
    int nul = ::open("/dev/null", O_RDWR);
    ::dup2(nul, 0);
    ::dup2(nul, 1);
    ::dup2(l >= 0 ? l : nul, 2);
    ::dup2(b, 3);
    ::dup2(w, 4);
    ::close_range(5, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(server.c_str(), argv.data());
    ::_exit(127);
  }
  wr.reset();
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  // Wait for the ready (or error) line.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + o.readyTimeout;
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return makeError(std::string(kServerName) + " did not report ready", ETIMEDOUT);
    struct pollfd pf {
      rd.get(), POLLIN, 0
    };
    int r = ::poll(&pf, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno != EINTR) return sysError(errno, "poll", "");
    if (r <= 0) continue;
    char buf[512];
    ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  line = trim(line.substr(0, line.find('\n')));
  if (auto r = parseReady(line)) return *r;
  if (line.rfind("error ", 0) == 0) {
    // "error ERRNO message"
    std::istringstream in(line.substr(6));
    int code = EIO;
    in >> code;
    std::string msg;
    std::getline(in, msg);
    msg = trim(msg.empty() ? msg : msg.substr(1));
    // From forkServer (async-signal-safe, so without the errno's text).
    if (msg.rfind("cgroup: ", 0) == 0) msg = msg.substr(8) + ": " + std::strerror(code);
    return makeError(msg, code ? code : EIO);
  }
  return makeError(std::string(kServerName) + " exited without reporting ready" +
                       (line.empty() ? std::string() : ": " + line),
                   EIO);
}

bool serverAlive(pid_t pid) {
  if (pid <= 0) return false;
  auto stat = readSmall("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  // "pid (comm) S ...": a zombie (Z) or dead (X) server is not alive.
  auto close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size()) return false;
  char state = (*stat)[close + 2];
  if (state == 'Z' || state == 'X') return false;
  auto open = stat->find('(');
  const std::string comm = stat->substr(open + 1, close - open - 1);
  // comm is truncated to 15 characters: "cxiosync-nbd-se"
  return std::string(kServerName).rfind(comm, 0) == 0 && !comm.empty();
}

StopResult stopServer(const std::string& devRoot, const std::string& sysRoot, int index, pid_t pid,
                      std::chrono::milliseconds wait) {
  StopResult r;
  const std::string dev = devRoot + "/nbd" + std::to_string(index);
  if (int fd = ::open(dev.c_str(), O_RDWR | O_CLOEXEC); fd >= 0) {
    UniqueFd f(fd);
    if (auto st = disconnectFd(f.get()); !st) r.note = st.error().message;
  } else {
    r.note = dev + ": " + std::strerror(errno);
  }
  auto until = [&](std::chrono::milliseconds d) {
    const auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end) {
      auto s = readDevice(sysRoot, index);
      bool down = !s || !s->connected;
      if (down && !serverAlive(pid)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  bool done = until(wait);
  if (!done && serverAlive(pid)) {
    ::kill(pid, SIGTERM);
    done = until(wait);
    if (!done && serverAlive(pid)) {
      ::kill(pid, SIGKILL);
      done = until(wait);
      r.note += (r.note.empty() ? "" : "; ") + std::string("server killed");
    }
  }
  auto s = readDevice(sysRoot, index);
  r.disconnected = !s || !s->connected;
  r.serverExited = !serverAlive(pid);
  return r;
}

}  // namespace cxiosync::nbd
