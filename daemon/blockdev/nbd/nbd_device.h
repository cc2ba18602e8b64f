// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Kernel nbd devices used as multi-worker block devices (see nbd_server.h for the data path):
//
//   /dev/nbdN ioctls (Linux nbd.h, 0xab): NBD_SET_SOCK (once per connection: multi-connection
//   mode), NBD_SET_BLKSIZE, NBD_SET_SIZE, NBD_SET_TIMEOUT, NBD_SET_FLAGS, NBD_DO_IT (blocks
//   until disconnect), NBD_DISCONNECT, NBD_CLEAR_SOCK.
//   /sys/block/nbdN/{pid,size,ro,queue/logical_block_size,mq/*}: `pid` exists only while a
//   server is connected (the thread inside NBD_DO_IT); one mq/K dir per connection.
//
// The server runs as its own process (cxiosync-nbd-server, in its own session), spawned here
// with fork+exec; it owns the nbd fd and the sockets, so a daemon restart does not disturb it.
// If it dies, the kernel sees every connection close and fails I/O at once (and a server that
// hangs is timed out after NBD_SET_TIMEOUT seconds): I/O errors, never a hang.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/kernel/fs.h"
#include "policy/result.h"

namespace cxiosync::nbd {

inline constexpr uint32_t kDefaultTimeoutSec = 30;
inline constexpr const char* kServerName = "cxiosync-nbd-server";

struct DeviceState {
  int index = -1;
  bool connected = false;  // /sys/block/nbdN/pid exists
  int kernelPid = 0;       // that pid (the server's NBD_DO_IT thread)
  uint64_t sizeBytes = 0;
  bool readOnly = false;
  uint32_t logicalBlockSize = 0;
  int connections = 0;        // hardware queues = NBD connections (mq/ dirs)
  uint32_t requestDepth = 0;  // queue/nr_requests
};

Result<std::vector<int>> listDevices(const std::string& sysRoot);
Result<DeviceState> readDevice(const std::string& sysRoot, int index);
// Free = no server connected and size 0 (nobody configured it).
bool isFree(const DeviceState& s);

// Server side: configures an opened /dev/nbdN for `kernelSocks` connections. NBD_SET_SOCK
// first (it claims the device for this thread; EBUSY = another task is setting it up).
struct AttachOptions {
  uint64_t sizeBytes = 0;
  uint32_t blockSize = 4096;
  uint32_t flags = 0;  // kFlag* of nbd_proto.h
  uint32_t timeoutSec = kDefaultTimeoutSec;
};
Status configureDevice(int nbdFd, const std::vector<int>& kernelSocks, const AttachOptions& o);
// NBD_DISCONNECT then NBD_CLEAR_SOCK on an open device fd (any CAP_SYS_ADMIN process may).
Status disconnectFd(int nbdFd);

// Daemon side.
struct SpawnOptions {
  std::string serverPath;  // "" = next to /proc/self/exe, else /usr/libexec/cxiosync/
  int backingFd = -1;
  int workers = 1;
  bool readOnly = false;
  uint32_t blockSize = 0;  // 0 = 512 (as a kernel loop device)
  uint32_t timeoutSec = kDefaultTimeoutSec;
  bool directIo = true;  // O_DIRECT on the backing file when it works
  std::string sysRoot = "/sys";
  std::string devRoot = "/dev";
  std::string logPath;  // the server's stderr (appended); "" = /dev/null
  std::chrono::milliseconds readyTimeout{60000};
  // The cgroup v2 directory the server starts in (nbd_cgroup.h); -1 = the daemon's own.
  // clone3(CLONE_INTO_CGROUP) (5.7+): the server's first instruction already runs there, so
  // none of its I/O is charged elsewhere. Without clone3 (ENOSYS, or 5.3-5.6: EINVAL/E2BIG;
  // EPERM from a seccomp filter) the child writes itself into cgroup.procs before exec. Any
  // other failure (EBUSY: not a leaf, the no-internal-processes rule; EACCES; EROFS) fails the
  // spawn with the reason; it never falls back to the daemon's cgroup.
  int cgroupFd = -1;
  std::string cgroupPath;  // for messages
};
struct SpawnResult {
  int index = -1;
  pid_t pid = 0;
  std::string device;  // /dev/nbdN
  bool directIo = false;
  int ioFlusherThreads = 0;
  int connections = 0;
  uint32_t blockSize = 0;
  uint64_t sizeBytes = 0;
};
std::string defaultServerPath();
Result<SpawnResult> spawnServer(const SpawnOptions& o);

// The server's ready line: "ready index=N pid=P dio=0|1 flusher=K conns=C bs=B size=S".
std::string formatReady(const SpawnResult& r);
std::optional<SpawnResult> parseReady(const std::string& line);

// Is pid a live cxiosync-nbd-server (not a zombie, not a recycled pid)?
bool serverAlive(pid_t pid);

// Detach: NBD_DISCONNECT, wait up to `wait` for the server to exit, then SIGTERM and SIGKILL.
struct StopResult {
  bool disconnected = false;  // the kernel shows no server any more
  bool serverExited = false;
  std::string note;
};
StopResult stopServer(const std::string& devRoot, const std::string& sysRoot, int index, pid_t pid,
                      std::chrono::milliseconds wait);

}  // namespace cxiosync::nbd
