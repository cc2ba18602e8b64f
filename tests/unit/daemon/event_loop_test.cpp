// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/core/event_loop.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

namespace cxiosync {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EventLoop> makeLoop() {
  auto loop = EventLoop::create();
  EXPECT_TRUE(loop);
  return std::move(loop.value());
}

TEST(EventLoopTest, OneShotAndPeriodicTimers) {
  auto loop = makeLoop();
  int once = 0, periodic = 0;
  ASSERT_TRUE(loop->addTimer(1ms, 0ns, [&] { ++once; }));
  ASSERT_TRUE(loop->addTimer(1ms, 2ms, [&] {
    if (++periodic == 3) loop->exit(7);
  }));
  auto rc = loop->run();
  ASSERT_TRUE(rc);
  EXPECT_EQ(rc.value(), 7);
  EXPECT_EQ(once, 1);
  EXPECT_EQ(periodic, 3);
}

TEST(EventLoopTest, RearmAndDisarmTimer) {
  auto loop = makeLoop();
  int fired = 0;
  auto id = loop->addTimer(1h, 0ns, [&] { ++fired; });
  ASSERT_TRUE(id);
  ASSERT_TRUE(loop->setTimer(id.value(), 1ms, 0ns));
  ASSERT_TRUE(loop->runOnce(1000ms));
  EXPECT_EQ(fired, 1);
  ASSERT_TRUE(loop->setTimer(id.value(), 0ns, 0ns));  // disarmed
  ASSERT_TRUE(loop->runOnce(20ms));
  EXPECT_EQ(fired, 1);
}

TEST(EventLoopTest, FdCallbackAndRemoval) {
  auto loop = makeLoop();
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  std::string got;
  EventLoop::SourceId id = 0;
  auto added = loop->addIo(p[0], EPOLLIN, [&](uint32_t ev) {
    EXPECT_TRUE(ev & EPOLLIN);
    char buf[16];
    ssize_t n = read(p[0], buf, sizeof buf);
    got.append(buf, static_cast<size_t>(n));
    loop->removeSource(id);  // a callback may remove its own source
  });
  ASSERT_TRUE(added);
  id = added.value();
  ASSERT_EQ(write(p[1], "hi", 2), 2);
  ASSERT_TRUE(loop->runOnce(1000ms));
  EXPECT_EQ(got, "hi");
  EXPECT_EQ(loop->sourceCount(), 0u);
  ASSERT_EQ(write(p[1], "x", 1), 1);
  ASSERT_TRUE(loop->runOnce(10ms));  // removed: not called again
  EXPECT_EQ(got, "hi");
  close(p[0]);
  close(p[1]);
}

TEST(EventLoopTest, SignalsArriveThroughSignalfd) {
  auto loop = makeLoop();
  std::vector<int> got;
  auto id = loop->addSignals({SIGUSR1, SIGUSR2}, [&](const signalfd_siginfo& si) {
    got.push_back(static_cast<int>(si.ssi_signo));
    if (got.size() == 2) loop->exit(0);
  });
  ASSERT_TRUE(id);
  ASSERT_EQ(raise(SIGUSR1), 0);  // blocked: queued for the signalfd, not fatal
  ASSERT_EQ(raise(SIGUSR2), 0);
  auto rc = loop->run();
  ASSERT_TRUE(rc);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], SIGUSR1);
  EXPECT_EQ(got[1], SIGUSR2);
  loop->removeSource(id.value());  // unblocks again
  sigset_t cur;
  sigprocmask(SIG_BLOCK, nullptr, &cur);
  EXPECT_FALSE(sigismember(&cur, SIGUSR1));
}

// The sd-bus pattern: prepare() sets events and a timeout before every wait; the callback
// runs with revents == 0 when the timeout passes without the fd becoming ready.
TEST(EventLoopTest, PrepareHookUpdatesEventsAndTimeout) {
  auto loop = makeLoop();
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  int prepared = 0;
  std::vector<uint32_t> calls;
  auto id = loop->addIo(
      p[1], 0, [&](uint32_t ev) { calls.push_back(ev); },
      [&]() -> EventLoop::Prepared {
        ++prepared;
        if (prepared == 1) return {EPOLLIN, std::chrono::microseconds(2000)};  // never readable
        return {EPOLLOUT, std::nullopt};                                       // writable at once
      });
  ASSERT_TRUE(id);
  ASSERT_TRUE(loop->runOnce(1000ms));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], 0u);  // timeout
  ASSERT_TRUE(loop->runOnce(1000ms));
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_TRUE(calls[1] & EPOLLOUT);
  EXPECT_EQ(EventLoop::pollToEpoll(POLLIN | POLLOUT), static_cast<uint32_t>(EPOLLIN | EPOLLOUT));
  loop->removeSource(id.value());
  close(p[0]);
  close(p[1]);
}

TEST(EventLoopTest, RunOnceHonoursMaxWait) {
  auto loop = makeLoop();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(loop->runOnce(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 15ms);
}

}  // namespace
}  // namespace cxiosync
