// SPDX-License-Identifier: GPL-2.0-or-later
// cxiosync-nbd-server: serves one kernel nbd device from a backing file with N worker
// threads (nbd_server.h), in multi-connection mode (one socket per worker). Spawned by the
// daemon (nbd_device.h spawnServer) in its own session; also usable by hand:
//
//   cxiosync-nbd-server (--backing-fd N | --file PATH) [--workers N] [--read-only]
//       [--block-size N] [--timeout S] [--direct-io=auto|off] [--device N]
//       [--status-fd N] [--sys-root DIR] [--dev-root DIR]
//
// Writes one line to --status-fd once the device is up ("ready index=... pid=..."), or
// "error ERRNO message" and exits 1. Runs until the device is disconnected (NBD_DISCONNECT
// from anyone, e.g. `cxiosync-loop detach nbdN`, or SIGTERM/SIGINT here), then flushes the
// backing file and exits 0.
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/nbd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "daemon/blockdev/nbd/nbd_device.h"
#include "daemon/blockdev/nbd/nbd_server.h"
#include "daemon/kernel/device_lock.h"
#include "policy/cli/command_line.h"

using namespace cxiosync;
using namespace cxiosync::nbd;

namespace {

int statusFd = -1;

[[noreturn]] void die(int code, const std::string& msg) {
  std::fprintf(stderr, "cxiosync-nbd-server[%d]: %s\n", ::getpid(), msg.c_str());
  if (statusFd >= 0) {
    std::string line = "error " + std::to_string(code) + " " + msg + "\n";
    (void)!::write(statusFd, line.data(), line.size());
  }
  std::exit(1);
}

const char kUsage[] =
    "usage: cxiosync-nbd-server (--backing-fd N | --file PATH) [--workers N] [--read-only]\n"
    "           [--block-size N] [--timeout S] [--direct-io=auto|on|off] [--device N]\n"
    "           [--status-fd N] [--sys-root DIR] [--dev-root DIR]\n"
    "Serves one nbd device from a backing file until it is disconnected. Exit status 0 after\n"
    "a disconnect, 1 on any error (also a bad command line; \"error ERRNO MESSAGE\" on\n"
    "--status-fd).\n";

struct ServerArgs {
  int backingFd = -1;
  std::string file;
  int workers = 1;
  bool readOnly = false;
  uint32_t blockSize = 0;
  uint32_t timeoutSec = kDefaultTimeoutSec;
  bool allowDio = true;
  int wantDevice = -1;
  std::string sysRoot = "/sys", devRoot = "/dev";
};

enum ServerOptionId : int {
  kBackingFd = 256,
  kFile,
  kWorkers,
  kReadOnly,
  kBlockSize,
  kTimeout,
  kDirectIo,
  kDevice,
  kStatusFd,
  kSysRoot,
  kDevRoot,
};

long number(const CliArg& a, long lo, long hi) {
  auto n = parseCliNumber(a, static_cast<uint64_t>(lo), static_cast<uint64_t>(hi));
  if (!n) die(EINVAL, n.error().message);
  return static_cast<long>(*n);
}

void applyServerOption(ServerArgs& s, const CliArg& a) {
  switch (a.id) {
    case kBackingFd:
      s.backingFd = static_cast<int>(number(a, 0, 1 << 20));
      break;
    case kFile:
      s.file = *a.value;
      break;
    case kWorkers:
      s.workers = static_cast<int>(number(a, 1, kMaxWorkers));
      break;
    case kReadOnly:
      s.readOnly = true;
      break;
    case kBlockSize:
      s.blockSize = static_cast<uint32_t>(number(a, 512, 4096));
      break;
    case kTimeout:
      s.timeoutSec = static_cast<uint32_t>(number(a, 1, 3600));
      break;
    case kDirectIo:
      if (*a.value != "auto" && *a.value != "on" && *a.value != "off")
        die(EINVAL, a.name + ": '" + *a.value + "' is not auto, on or off");
      s.allowDio = *a.value != "off";
      break;
    case kDevice:
      s.wantDevice = static_cast<int>(number(a, 0, 1 << 20));
      break;
    case kStatusFd:
      statusFd = static_cast<int>(number(a, 0, 1 << 20));
      break;
    case kSysRoot:
      s.sysRoot = *a.value;
      break;
    case kDevRoot:
      s.devRoot = *a.value;
      break;
    case 'h':
      std::fputs(kUsage, stdout);
      std::exit(0);
    default:
      die(EINVAL, "unexpected argument '" + a.name + "'");
  }
}

// Errors die() at once: --status-fd, when it came first, hears about them.
ServerArgs parseServerArgs(int argc, char** argv) {
  ServerArgs s;
  CommandLine cl(std::vector<std::string>(argv + 1, argv + argc), "h",
                 {{"backing-fd", required_argument, nullptr, kBackingFd},
                  {"file", required_argument, nullptr, kFile},
                  {"workers", required_argument, nullptr, kWorkers},
                  {"read-only", no_argument, nullptr, kReadOnly},
                  {"block-size", required_argument, nullptr, kBlockSize},
                  {"timeout", required_argument, nullptr, kTimeout},
                  {"direct-io", required_argument, nullptr, kDirectIo},
                  {"device", required_argument, nullptr, kDevice},
                  {"status-fd", required_argument, nullptr, kStatusFd},
                  {"sys-root", required_argument, nullptr, kSysRoot},
                  {"dev-root", required_argument, nullptr, kDevRoot},
                  {"help", no_argument, nullptr, 'h'}});
  while (true) {
    auto a = cl.next();
    if (!a) die(EINVAL, a.error().message);
    if (!*a) break;
    applyServerOption(s, **a);
  }
  if (!cl.rest().empty()) die(EINVAL, "unexpected argument '" + cl.rest()[0] + "'");
  return s;
}

struct Backing {
  int fd = -1;
  int accessMode = 0;  // O_RDONLY | O_RDWR: of the caller's open file description
  bool readOnly = false;
  uint32_t blockSize = 0;
  uint64_t size = 0;  // whole blocks
};

Backing openBacking(const ServerArgs& a) {
  Backing b;
  b.fd = a.backingFd;
  b.readOnly = a.readOnly;
  if (!a.file.empty()) {
    b.fd = ::open(a.file.c_str(), (a.readOnly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (b.fd < 0) die(errno, a.file + ": " + std::strerror(errno));
  }
  if (b.fd < 0) die(EINVAL, "--backing-fd or --file is required");
  ::fcntl(b.fd, F_SETFD, FD_CLOEXEC);

  int fl = ::fcntl(b.fd, F_GETFL);
  if (fl < 0) die(EBADF, "backing fd: " + std::string(std::strerror(errno)));
  b.accessMode = fl & O_ACCMODE;
  if (b.accessMode == O_WRONLY) die(EBADF, "the backing fd is write-only");
  if (b.accessMode == O_RDONLY) b.readOnly = true;  // the caller's rights count
  struct stat st {};
  if (::fstat(b.fd, &st) != 0) die(errno, "fstat backing fd");
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (S_ISBLK(st.st_mode)) {
    if (::ioctl(b.fd, BLKGETSIZE64, &size) != 0) die(errno, "BLKGETSIZE64");
  } else if (!S_ISREG(st.st_mode)) {
    die(EINVAL, "the backing file must be a regular file or a block device");
  }
  // 512 like a kernel loop device: any filesystem made elsewhere mounts (ext4 with 1 KiB
  // blocks does not on a 4096-byte device). Requests are 4 KiB-aligned in practice anyway.
  b.blockSize = a.blockSize ? a.blockSize : 512;
  if ((b.blockSize & (b.blockSize - 1)) != 0) die(EINVAL, "block size must be a power of two");
  b.size = size - size % b.blockSize;
  if (b.size == 0) die(EINVAL, "the backing file is smaller than one block");
  return b;
}

// O_DIRECT on the same open file: reopened through /proc/self/fd with the SAME access
// mode (the caller's rights were checked when they opened it; this adds none), so the
// caller's own file description keeps its flags. -1: buffered only.
int openDirect(const Backing& b) {
  const std::string self = "/proc/self/fd/" + std::to_string(b.fd);
  int directFd = ::open(self.c_str(), b.accessMode | O_DIRECT | O_CLOEXEC);
  if (directFd >= 0) {
    // Probe once: some filesystems accept the flag and fail every aligned read.
    void* probe = std::aligned_alloc(4096, 4096);
    if (::pread(directFd, probe, 4096, 0) < 0 && errno == EINVAL) {
      ::close(directFd);
      directFd = -1;
    }
    std::free(probe);
  }
  return directFd;
}

// Signals: handled synchronously by the main thread only.
sigset_t blockSignals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return sigs;
}

struct Attached {
  int index = -1;
  UniqueFd nbdFd;
  std::vector<UniqueFd> serverSocks;
  UniqueFd lock;  // BSD lock on the node until the device is up (device_lock.h)
};

// An open candidate device configured with `workers` fresh socket pairs, or an error (EBUSY:
// someone else is setting it up right now).
Result<Attached> configureWith(const ServerArgs& a, const AttachOptions& ao, UniqueFd dev,
                               int index, const std::string& path) {
  std::vector<UniqueFd> mine, kernel;
  std::vector<int> kfds;
  for (int w = 0; w < a.workers; ++w) {
    int sp[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0)
      die(errno, "socketpair: " + std::string(std::strerror(errno)));
    mine.emplace_back(sp[0]);
    kernel.emplace_back(sp[1]);
    kfds.push_back(sp[1]);
  }
  auto c = configureDevice(dev.get(), kfds, ao);
  if (!c) {
    if (c.error().code != EBUSY) (void)::ioctl(dev.get(), NBD_CLEAR_SOCK);
    return makeError(path + ": " + c.error().message, c.error().code);
  }
  // The kernel holds its own references to its ends now; `kernel` closes ours.
  return Attached{index, std::move(dev), std::move(mine), UniqueFd()};
}

// A free device: no server connected and size 0. EBUSY on SET_SOCK = someone else is
// setting it up right now: take the next one.
Attached attachDevice(const ServerArgs& a, const Backing& b) {
  std::vector<int> candidates;
  if (a.wantDevice >= 0) {
    candidates.push_back(a.wantDevice);
  } else {
    auto l = listDevices(a.sysRoot);
    if (!l) die(l.error().code, l.error().message + " (is the nbd module loaded?)");
    candidates = *l;
  }
  AttachOptions ao;
  ao.sizeBytes = b.size;
  ao.blockSize = b.blockSize;
  ao.timeoutSec = a.timeoutSec;
  ao.flags = kFlagHasFlags | kFlagSendFlush | kFlagSendTrim | kFlagCanMultiConn |
             (b.readOnly ? kFlagReadOnly : 0);
  std::string lastErr = "no nbd device";
  for (int cand : candidates) {
    auto s = readDevice(a.sysRoot, cand);
    if (!s || !isFree(*s)) {
      if (a.wantDevice >= 0) die(EBUSY, "nbd" + std::to_string(cand) + " is in use");
      continue;
    }
    const std::string path = a.devRoot + "/nbd" + std::to_string(cand);
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      lastErr = path + ": " + std::strerror(errno);
      continue;
    }
    UniqueFd dev(fd);
    auto lock = lockDeviceNode(dev.get());
    if (!lock) {
      // Someone else is configuring it (or udev is probing it): not free for us.
      lastErr = lock.error().message;
      if (a.wantDevice >= 0) die(EBUSY, lastErr);
      continue;
    }
    auto t = configureWith(a, ao, std::move(dev), cand, path);
    if (t) {
      t->lock = std::move(*lock);
      return std::move(*t);
    }
    lastErr = t.error().message;
    if (t.error().code == EBUSY && a.wantDevice < 0) continue;
    die(t.error().code, lastErr);
  }
  die(EBUSY, "no free nbd device: " + lastErr);
}

// Ready when the kernel shows the server (pid attribute) and the connections.
bool waitConnected(const std::string& sysRoot, int index, const std::atomic<bool>& doItDone) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!doItDone && std::chrono::steady_clock::now() < deadline) {
    auto s = readDevice(sysRoot, index);
    if (s && s->connected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The nbd driver leaves max_sectors_kb at 128 (its max_hw_sectors_kb is 32 MiB): every
// larger request would be split into 128 KiB pieces, each a round trip to a worker. Use
// the block layer's default cap that loop devices get (1280 KiB).
void raiseMaxSectors(const std::string& sysRoot, int index) {
  const std::string q = sysRoot + "/block/nbd" + std::to_string(index) + "/queue/";
  uint64_t hw = 0;
  if (int f = ::open((q + "max_hw_sectors_kb").c_str(), O_RDONLY | O_CLOEXEC); f >= 0) {
    char b[32] = {};
    if (::read(f, b, sizeof b - 1) > 0) hw = std::strtoull(b, nullptr, 10);
    ::close(f);
  }
  const std::string v = std::to_string(hw ? std::min<uint64_t>(hw, 1280) : 1280);
  if (int f = ::open((q + "max_sectors_kb").c_str(), O_WRONLY | O_CLOEXEC); f >= 0) {
    if (::write(f, v.data(), v.size()) < 0)
      std::fprintf(stderr, "cxiosync-nbd-server: max_sectors_kb %s: %s\n", v.c_str(),
                   std::strerror(errno));
    ::close(f);
  }
}

void reportReady(Server& server, const Backing& b, int index, int workers, int directFd) {
  // Let the worker threads reach their prctl before reporting it.
  for (int k = 0; k < 100 && server.stats().ioFlusherThreads + server.stats().ioFlusherFailures <
                                 workers + workers;
       ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  SpawnResult r;
  r.index = index;
  r.pid = ::getpid();
  r.directIo = directFd >= 0;
  r.ioFlusherThreads = server.stats().ioFlusherThreads;
  r.connections = workers;
  r.blockSize = b.blockSize;
  r.sizeBytes = b.size;
  std::fprintf(stderr,
               "cxiosync-nbd-server[%d]: nbd%d up: %d workers/connections, %s, %d of %d "
               "threads with PR_SET_IO_FLUSHER\n",
               ::getpid(), index, workers, directFd >= 0 ? "O_DIRECT" : "buffered",
               server.stats().ioFlusherThreads.load(), 2 * workers);
  if (statusFd >= 0) {
    std::string line = formatReady(r) + "\n";
    (void)!::write(statusFd, line.data(), line.size());
    ::close(statusFd);
    statusFd = -1;
  }
}

// Until NBD_DO_IT returns; the first signal asks the kernel to disconnect.
void waitDisconnect(const sigset_t& sigs, const std::atomic<bool>& doItDone, int nbdFd) {
  bool asked = false;
  while (!doItDone) {
    struct timespec ts {
      0, 200 * 1000 * 1000
    };
    int sig = ::sigtimedwait(&sigs, nullptr, &ts);
    if (sig > 0 && !asked) {
      asked = true;
      (void)disconnectFd(nbdFd);
    }
  }
}

void logStats(const Server& server, int index) {
  const auto& stt = server.stats();
  std::fprintf(stderr,
               "cxiosync-nbd-server[%d]: nbd%d disconnected: %llu reads %llu writes %llu "
               "flushes %llu trims %llu errors, max %d in flight%s%s\n",
               ::getpid(), index, static_cast<unsigned long long>(stt.reads.load()),
               static_cast<unsigned long long>(stt.writes.load()),
               static_cast<unsigned long long>(stt.flushes.load()),
               static_cast<unsigned long long>(stt.trims.load()),
               static_cast<unsigned long long>(stt.errors.load()), stt.maxInFlight.load(),
               server.lastError().empty() ? "" : "; ", server.lastError().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const ServerArgs args = parseServerArgs(argc, argv);
  if (statusFd >= 0) ::fcntl(statusFd, F_SETFD, FD_CLOEXEC);
  const Backing b = openBacking(args);
  const int directFd = args.allowDio ? openDirect(b) : -1;
  const sigset_t sigs = blockSignals();
  Attached dev = attachDevice(args, b);

  ServeOptions so;
  so.bufferedFd = b.fd;
  so.directFd = directFd;
  so.dioAlign = 512;  // offsets/lengths; buffers are always 4096-aligned (EINVAL: buffered)
  so.exportSize = b.size;
  so.readOnly = b.readOnly;
  so.workers = args.workers;
  Server server(so, std::move(dev.serverSocks));
  server.start();

  std::atomic<bool> doItDone{false};
  std::atomic<int> doItErr{0};
  std::thread doIt([&] {
    // NBD_DO_IT blocks until the device is disconnected (or every connection died).
    if (::ioctl(dev.nbdFd.get(), NBD_DO_IT) < 0) doItErr = errno;
    doItDone = true;
  });
  if (!waitConnected(args.sysRoot, dev.index, doItDone)) {
    (void)disconnectFd(dev.nbdFd.get());
    doIt.join();
    server.stop();
    die(doItErr ? doItErr.load() : ETIMEDOUT,
        "nbd" + std::to_string(dev.index) + " did not come up" +
            (doItErr ? std::string(": NBD_DO_IT: ") + std::strerror(doItErr) : std::string()));
  }
  raiseMaxSectors(args.sysRoot, dev.index);
  releaseDeviceLock(dev.lock);  // connected and tuned: udev may probe it now
  reportReady(server, b, dev.index, args.workers, directFd);
  waitDisconnect(sigs, doItDone, dev.nbdFd.get());
  doIt.join();
  (void)::ioctl(dev.nbdFd.get(), NBD_CLEAR_SOCK);
  server.stop();
  ::fdatasync(b.fd);
  logStats(server, dev.index);
  return 0;
}
