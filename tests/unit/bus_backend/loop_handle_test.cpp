// SPDX-License-Identifier: GPL-2.0-or-later
// LoopSetup's device_fd (daemon/app/loop_bus_backend.h): read-only for root, and for any other
// caller no handle on the device at all (/dev/null), also when the device could be reopened.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "daemon/app/loop_bus_backend.h"

namespace cxiosync {
namespace {

int accessMode(int fd) {
  return ::fcntl(fd, F_GETFL) & O_ACCMODE;
}

bool isDevNull(int fd) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat("/dev/null", &b) == 0 && S_ISCHR(a.st_mode) &&
         a.st_rdev == b.st_rdev;
}

TEST(LoopCallerHandle, AReadWriteDeviceFdComesBackReadOnly) {
  // A read-write fd on a file stands for the daemon's read-write device fd.
  char path[] = "/tmp/cxiosync-handle-XXXXXX";
  int rw = ::mkstemp(path);
  ASSERT_GE(rw, 0);
  ASSERT_EQ(accessMode(rw), O_RDWR);
  auto h = loopCallerHandle(UniqueFd(::dup(rw)), "/nonexistent", 0);
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(accessMode(h->get()), O_RDONLY);
  EXPECT_FALSE(isDevNull(h->get()));
  // Through the path when the fd is gone.
  auto byPath = loopCallerHandle(UniqueFd(), path, 0);
  ASSERT_TRUE(byPath.ok()) << byPath.error().message;
  EXPECT_EQ(accessMode(byPath->get()), O_RDONLY);
  ::close(rw);
  ::unlink(path);
}

// Issue 26: a handle on /dev/nbdN or /dev/loopN reaches whatever is attached there later, so a
// non-root caller gets none, even where the device could be reopened read-only.
TEST(LoopCallerHandle, ANonRootCallerGetsNoHandleOnTheDevice) {
  char path[] = "/tmp/cxiosync-handle-XXXXXX";
  int rw = ::mkstemp(path);
  ASSERT_GE(rw, 0);
  for (const bool byFd : {true, false}) {
    auto h = loopCallerHandle(byFd ? UniqueFd(::dup(rw)) : UniqueFd(), path, 1000);
    ASSERT_TRUE(h.ok()) << h.error().message;
    EXPECT_TRUE(isDevNull(h->get())) << (byFd ? "from the fd" : "by path");
  }
  ::close(rw);
  ::unlink(path);
}

// A socket cannot be reopened through /proc/self/fd (ENXIO): the reopen fails. Before, the
// read-write original went to the caller whoever it was.
TEST(LoopCallerHandle, AFailedReopenNeverHandsANonRootCallerTheReadWriteFd) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ::close(sv[1]);
  ASSERT_EQ(accessMode(sv[0]), O_RDWR);
  auto user = loopCallerHandle(UniqueFd(::dup(sv[0])), "/nonexistent/loop7", 1000);
  ASSERT_TRUE(user.ok()) << user.error().message;
  EXPECT_TRUE(isDevNull(user->get()))
      << "a non-root caller got fd with mode " << accessMode(user->get());
  // uid 0 could open the node read-write itself: it gets the original rather than nothing.
  auto root = loopCallerHandle(UniqueFd(::dup(sv[0])), "/nonexistent/loop7", 0);
  ASSERT_TRUE(root.ok()) << root.error().message;
  EXPECT_GE(root->get(), 0);
  ::close(sv[0]);
}

}  // namespace
}  // namespace cxiosync
