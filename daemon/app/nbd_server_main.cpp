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

#include "daemon/blockdev/nbd/nbd_device.h"
#include "daemon/blockdev/nbd/nbd_server.h"

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

long num(const char* opt, const std::string& v, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || n < lo || n > hi)
    die(EINVAL, std::string(opt) + ": \"" + v + "\" is not a number in " + std::to_string(lo) +
                    ".." + std::to_string(hi));
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  int backingFd = -1;
  std::string file;
  int workers = 1;
  bool readOnly = false;
  uint32_t blockSize = 0;
  uint32_t timeoutSec = kDefaultTimeoutSec;
  bool allowDio = true;
  int wantDevice = -1;
  std::string sysRoot = "/sys", devRoot = "/dev";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(EINVAL, a + " needs a value");
      return argv[++i];
    };
    if (a == "--backing-fd")
      backingFd = static_cast<int>(num("--backing-fd", next(), 0, 1 << 20));
    else if (a == "--file")
      file = next();
    else if (a == "--workers")
      workers = static_cast<int>(num("--workers", next(), 1, kMaxWorkers));
    else if (a == "--read-only")
      readOnly = true;
    else if (a == "--block-size")
      blockSize = static_cast<uint32_t>(num("--block-size", next(), 512, 4096));
    else if (a == "--timeout")
      timeoutSec = static_cast<uint32_t>(num("--timeout", next(), 1, 3600));
    else if (a == "--direct-io=auto" || a == "--direct-io=on")
      allowDio = true;
    else if (a == "--direct-io=off")
      allowDio = false;
    else if (a == "--device")
      wantDevice = static_cast<int>(num("--device", next(), 0, 1 << 20));
    else if (a == "--status-fd")
      statusFd = static_cast<int>(num("--status-fd", next(), 0, 1 << 20));
    else if (a == "--sys-root")
      sysRoot = next();
    else if (a == "--dev-root")
      devRoot = next();
    else
      die(EINVAL, "unknown option " + a);
  }
  if (statusFd >= 0) ::fcntl(statusFd, F_SETFD, FD_CLOEXEC);
  if (!file.empty()) {
    backingFd = ::open(file.c_str(), (readOnly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (backingFd < 0) die(errno, file + ": " + std::strerror(errno));
  }
  if (backingFd < 0) die(EINVAL, "--backing-fd or --file is required");
  ::fcntl(backingFd, F_SETFD, FD_CLOEXEC);

  int fl = ::fcntl(backingFd, F_GETFL);
  if (fl < 0) die(EBADF, "backing fd: " + std::string(std::strerror(errno)));
  if ((fl & O_ACCMODE) == O_WRONLY) die(EBADF, "the backing fd is write-only");
  if ((fl & O_ACCMODE) == O_RDONLY) readOnly = true;  // the caller's rights count
  struct stat st {};
  if (::fstat(backingFd, &st) != 0) die(errno, "fstat backing fd");
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (S_ISBLK(st.st_mode)) {
    if (::ioctl(backingFd, BLKGETSIZE64, &size) != 0) die(errno, "BLKGETSIZE64");
  } else if (!S_ISREG(st.st_mode)) {
    die(EINVAL, "the backing file must be a regular file or a block device");
  }
  // 512 like a kernel loop device: any filesystem made elsewhere mounts (ext4 with 1 KiB
  // blocks does not on a 4096-byte device). Requests are 4 KiB-aligned in practice anyway.
  if (blockSize == 0) blockSize = 512;
  if ((blockSize & (blockSize - 1)) != 0) die(EINVAL, "block size must be a power of two");
  size -= size % blockSize;
  if (size == 0) die(EINVAL, "the backing file is smaller than one block");

  // O_DIRECT on the same open file: reopened through /proc/self/fd with the SAME access
  // mode (the caller's rights were checked when they opened it; this adds none), so the
  // caller's own file description keeps its flags.
  int directFd = -1;
  if (allowDio) {
    const std::string self = "/proc/self/fd/" + std::to_string(backingFd);
    directFd = ::open(self.c_str(), (fl & O_ACCMODE) | O_DIRECT | O_CLOEXEC);
    if (directFd >= 0) {
      // Probe once: some filesystems accept the flag and fail every aligned read.
      void* probe = std::aligned_alloc(4096, 4096);
      if (::pread(directFd, probe, 4096, 0) < 0 && errno == EINVAL) {
        ::close(directFd);
        directFd = -1;
      }
      std::free(probe);
    }
  }

  // Signals: handled synchronously by the main thread only.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // A free device: no server connected and size 0. EBUSY on SET_SOCK = someone else is
  // setting it up right now: take the next one.
  std::vector<int> candidates;
  if (wantDevice >= 0) {
    candidates.push_back(wantDevice);
  } else {
    auto l = listDevices(sysRoot);
    if (!l) die(l.error().code, l.error().message + " (is the nbd module loaded?)");
    candidates = *l;
  }
  UniqueFd nbdFd;
  std::vector<UniqueFd> serverSocks;
  int index = -1;
  AttachOptions ao;
  ao.sizeBytes = size;
  ao.blockSize = blockSize;
  ao.timeoutSec = timeoutSec;
  ao.flags = kFlagHasFlags | kFlagSendFlush | kFlagSendTrim | kFlagCanMultiConn |
             (readOnly ? kFlagReadOnly : 0);
  std::string lastErr = "no nbd device";
  for (int cand : candidates) {
    auto s = readDevice(sysRoot, cand);
    if (!s || !isFree(*s)) {
      if (wantDevice >= 0) die(EBUSY, "nbd" + std::to_string(cand) + " is in use");
      continue;
    }
    const std::string path = devRoot + "/nbd" + std::to_string(cand);
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      lastErr = path + ": " + std::strerror(errno);
      continue;
    }
    UniqueFd dev(fd);
    std::vector<UniqueFd> mine, kernel;
    std::vector<int> kfds;
    for (int w = 0; w < workers; ++w) {
      int sp[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0)
        die(errno, "socketpair: " + std::string(std::strerror(errno)));
      mine.emplace_back(sp[0]);
      kernel.emplace_back(sp[1]);
      kfds.push_back(sp[1]);
    }
    auto c = configureDevice(dev.get(), kfds, ao);
    if (!c) {
      lastErr = path + ": " + c.error().message;
      if (c.error().code != EBUSY) (void)::ioctl(dev.get(), NBD_CLEAR_SOCK);
      if (c.error().code == EBUSY && wantDevice < 0) continue;
      die(c.error().code, lastErr);
    }
    // The kernel holds its own references to its ends now.
    kernel.clear();
    nbdFd = std::move(dev);
    serverSocks = std::move(mine);
    index = cand;
    break;
  }
  if (index < 0) die(EBUSY, "no free nbd device: " + lastErr);

  ServeOptions so;
  so.bufferedFd = backingFd;
  so.directFd = directFd;
  so.dioAlign = 512;  // offsets/lengths; buffers are always 4096-aligned (EINVAL: buffered)
  so.exportSize = size;
  so.readOnly = readOnly;
  so.workers = workers;
  Server server(so, std::move(serverSocks));
  server.start();

  std::atomic<bool> doItDone{false};
  std::atomic<int> doItErr{0};
  std::thread doIt([&] {
    // NBD_DO_IT blocks until the device is disconnected (or every connection died).
    if (::ioctl(nbdFd.get(), NBD_DO_IT) < 0) doItErr = errno;
    doItDone = true;
  });

  // Ready when the kernel shows the server (pid attribute) and the connections.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool ready = false;
  while (!doItDone && std::chrono::steady_clock::now() < deadline) {
    auto s = readDevice(sysRoot, index);
    if (s && s->connected) {
      ready = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!ready) {
    (void)disconnectFd(nbdFd.get());
    doIt.join();
    server.stop();
    die(doItErr ? doItErr.load() : ETIMEDOUT,
        "nbd" + std::to_string(index) + " did not come up" +
            (doItErr ? std::string(": NBD_DO_IT: ") + std::strerror(doItErr) : std::string()));
  }
  // The nbd driver leaves max_sectors_kb at 128 (its max_hw_sectors_kb is 32 MiB): every
  // larger request would be split into 128 KiB pieces, each a round trip to a worker. Use
  // the block layer's default cap that loop devices get (1280 KiB).
  {
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
  r.blockSize = blockSize;
  r.sizeBytes = size;
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

  bool asked = false;
  while (!doItDone) {
    struct timespec ts {
      0, 200 * 1000 * 1000
    };
    int sig = ::sigtimedwait(&sigs, nullptr, &ts);
    if (sig > 0 && !asked) {
      asked = true;
      (void)disconnectFd(nbdFd.get());
    }
  }
  doIt.join();
  (void)::ioctl(nbdFd.get(), NBD_CLEAR_SOCK);
  server.stop();
  ::fdatasync(backingFd);
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
  return 0;
}
