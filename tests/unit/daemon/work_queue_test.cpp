// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/core/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace cxiosync {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::unique_ptr<EventLoop> makeLoop() {
  auto loop = EventLoop::create();
  EXPECT_TRUE(loop);
  return std::move(loop.value());
}

// Runs the loop until pred() or `limit`.
template <class P>
bool runUntil(EventLoop& loop, P pred, std::chrono::milliseconds limit = 5000ms) {
  const auto end = Clock::now() + limit;
  while (!pred() && Clock::now() < end) {
    if (!loop.runOnce(10ms)) return false;
  }
  return pred();
}

// A gate a job waits on (as on a hung file system) until the test opens it.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [this] { return open; });
  }
  void release() {
    std::lock_guard<std::mutex> l(m);
    open = true;
    cv.notify_all();
  }
};

TEST(WorkQueueTest, WorkRunsOnTheWorkerAndDoneOnTheLoopInOrder) {
  auto loop = makeLoop();
  auto q = WorkQueue::create(*loop, 8);
  ASSERT_TRUE(q);
  const auto loopThread = std::this_thread::get_id();
  std::vector<int> order;
  std::atomic<int> onLoop{0}, offLoop{0};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*q)->submit(
        [&] {
          if (std::this_thread::get_id() != loopThread) ++offLoop;
        },
        [&, i] {
          if (std::this_thread::get_id() == loopThread) ++onLoop;
          order.push_back(i);
        }));
  }
  EXPECT_EQ((*q)->pending(), 5u);
  ASSERT_TRUE(runUntil(*loop, [&] { return order.size() == 5; }));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(offLoop, 5);
  EXPECT_EQ(onLoop, 5);
  EXPECT_EQ((*q)->pending(), 0u);
}

// A job stuck in the kernel stalls the jobs behind it, never the loop; the queue is bounded.
TEST(WorkQueueTest, AHungJobLeavesTheLoopFreeAndTheQueueBounded) {
  auto loop = makeLoop();
  auto q = WorkQueue::create(*loop, 3);
  ASSERT_TRUE(q);
  Gate gate;
  int done = 0, ticks = 0;
  ASSERT_TRUE((*q)->submit([&] { gate.wait(); }, [&] { ++done; }));
  ASSERT_TRUE((*q)->submit([] {}, [&] { ++done; }));
  ASSERT_TRUE((*q)->submit([] {}, [&] { ++done; }));
  EXPECT_FALSE((*q)->submit([] {}, [&] { ++done; })) << "a fourth job beyond maxJobs = 3";
  ASSERT_TRUE(loop->addTimer(1ms, 5ms, [&] { ++ticks; }));
  const auto t0 = Clock::now();
  ASSERT_TRUE(runUntil(*loop, [&] { return ticks >= 20; }));
  EXPECT_LT(Clock::now() - t0, 2s) << "the timer kept running while the job hung";
  EXPECT_EQ(done, 0);
  gate.release();
  ASSERT_TRUE(runUntil(*loop, [&] { return done == 3; }));
  EXPECT_TRUE((*q)->submit([] {}, [&] { ++done; })) << "room again";
  ASSERT_TRUE(runUntil(*loop, [&] { return done == 4; }));
}

// A done() may submit the next step of its call, even when the queue was full.
TEST(WorkQueueTest, DoneMaySubmitTheNextStep) {
  auto loop = makeLoop();
  auto q = WorkQueue::create(*loop, 1);
  ASSERT_TRUE(q);
  WorkQueue* raw = q->get();
  bool second = false, submitted = false;
  ASSERT_TRUE(raw->submit([] {}, [&] { submitted = raw->submit([] {}, [&] { second = true; }); }));
  ASSERT_TRUE(runUntil(*loop, [&] { return second; }));
  EXPECT_TRUE(submitted);
}

// Destroying the queue with a job stuck for good returns after stopWait; completions of
// jobs not started never run.
TEST(WorkQueueTest, StopDoesNotWaitForAStuckJobForever) {
  auto loop = makeLoop();
  auto q = WorkQueue::create(*loop, 4);
  ASSERT_TRUE(q);
  (*q)->stopWait = 100ms;
  auto gate = std::make_shared<Gate>();
  int done = 0;
  ASSERT_TRUE((*q)->submit([gate] { gate->wait(); }, [&] { ++done; }));
  ASSERT_TRUE((*q)->submit([] {}, [&] { ++done; }));
  std::this_thread::sleep_for(20ms);  // the first job is running
  const auto t0 = Clock::now();
  q->reset();
  EXPECT_LT(Clock::now() - t0, 1s);
  EXPECT_EQ(done, 0);
  gate->release();  // the thread left behind ends; it touches nothing of ours
  std::this_thread::sleep_for(20ms);
}

}  // namespace
}  // namespace cxiosync
