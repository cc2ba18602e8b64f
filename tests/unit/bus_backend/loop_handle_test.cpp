// SPDX-License-Identifier: GPL-2.0-or-later
// LoopSetup's device_fd (daemon/app/loop_bus_backend.h): never read-write for a non-root
// caller, also when the read-only reopen fails.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "daemon/app/loop_bus_backend.h"

namespace cxiosync {
namespace {

int accessMode(int fd) {
  return ::fcntl(fd, F_GETFL) & O_ACCMODE;
}

TEST(LoopCallerHandle, AReadWriteDeviceFdComesBackReadOnly) {
  // A read-write fd on a file stands for the daemon's read-write device fd.
  char path[] = "/tmp/cxiosync-handle-XXXXXX";
  int rw = ::mkstemp(path);
  ASSERT_GE(rw, 0);
  ASSERT_EQ(accessMode(rw), O_RDWR);
  for (uint32_t uid : {0u, 1000u}) {
    auto h = loopCallerHandle(UniqueFd(::dup(rw)), "/nonexistent", uid);
    ASSERT_TRUE(h.ok()) << h.error().message;
    EXPECT_EQ(accessMode(h->get()), O_RDONLY) << "uid " << uid;
  }
  // Through the path when the fd is gone.
  auto byPath = loopCallerHandle(UniqueFd(), path, 1000);
  ASSERT_TRUE(byPath.ok()) << byPath.error().message;
  EXPECT_EQ(accessMode(byPath->get()), O_RDONLY);
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
  EXPECT_FALSE(user.ok()) << "a non-root caller got fd with mode " << accessMode(user->get());
  // uid 0 could open the node read-write itself: it gets the original rather than nothing.
  auto root = loopCallerHandle(UniqueFd(::dup(sv[0])), "/nonexistent/loop7", 0);
  ASSERT_TRUE(root.ok()) << root.error().message;
  EXPECT_GE(root->get(), 0);
  ::close(sv[0]);
}

}  // namespace
}  // namespace cxiosync
