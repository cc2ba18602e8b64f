// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace cxiosync {

Result<UniqueFd> lockDeviceNode(int devFd) {
  const std::string self = "/proc/self/fd/" + std::to_string(devFd);
  // O_NONBLOCK: opening a block device never waits for media; read-only: the lock needs no
  // write access and no write-close event reaches udev from this fd.
  int fd = ::open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return UniqueFd();
  UniqueFd lock(fd);
  int r;
  do {
    r = ::flock(lock.get(), LOCK_EX | LOCK_NB);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return sysError(errno, "flock LOCK_EX", self);
  return lock;
}

void releaseDeviceLock(UniqueFd& lock) {
  if (!lock.valid()) return;
  if (const char* hold = std::getenv("CXIOSYNC_TEST_DEVICE_LOCK_HOLD_MS")) {
    const long ms = std::strtol(hold, nullptr, 10);
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms < 30000 ? ms : 30000));
  }
  lock.reset();
}

}  // namespace cxiosync
