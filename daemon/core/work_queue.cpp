// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/core/work_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

namespace cxiosync {

struct WorkQueue::Shared {
  struct Job {
    Fn work, done;
  };
  std::mutex m;
  std::condition_variable cv;
  std::deque<Job> queued, finished;
  bool stop = false;
  bool running = false;
  bool abandoned = false;  // the destructor gave up waiting: touch nothing of the daemon's
  int efd = -1;
  std::thread thread;

  ~Shared() {
    if (efd >= 0) ::close(efd);
  }

  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [this] { return stop || !queued.empty(); });
        if (stop) return;
        job = std::move(queued.front());
        queued.pop_front();
        running = true;
      }
      try {
        job.work();
      } catch (...) {
        // A job reports its own errors through its box; nothing may end the worker.
      }
      std::lock_guard<std::mutex> l(m);
      running = false;
      if (abandoned) {
        // The daemon is gone or going: its closures may point at freed objects, and the
        // process is about to exit. Keep them rather than destroy them on this thread; kept
        // reachable from a static, so LeakSanitizer sees a deliberate keep, not a leak.
        static std::mutex keptLock;
        static auto* const kept = new std::deque<Job>;
        std::lock_guard<std::mutex> k(keptLock);
        kept->push_back(std::move(job));
        return;
      }
      finished.push_back(std::move(job));
      cv.notify_all();
      const uint64_t one = 1;
      while (::write(efd, &one, sizeof one) < 0 && errno == EINTR) {
      }
    }
  }
};

WorkQueue::WorkQueue(EventLoop& loop, std::shared_ptr<Shared> s, size_t maxJobs)
    : loop_(loop), s_(std::move(s)), maxJobs_(maxJobs) {}

Result<std::unique_ptr<WorkQueue>> WorkQueue::create(EventLoop& loop, size_t maxJobs) {
  auto s = std::make_shared<Shared>();
  s->efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->efd < 0) return makeError(std::string("eventfd: ") + std::strerror(errno), errno);
  std::unique_ptr<WorkQueue> q(new WorkQueue(loop, s, maxJobs));
  WorkQueue* raw = q.get();
  auto id = loop.addIo(s->efd, EPOLLIN, [raw](uint32_t) { raw->deliver(); });
  if (!id) return id.error();
  q->source_ = *id;
  try {
    // The thread holds the shared state, so a worker left behind never sees it freed.
    s->thread = std::thread([s] { s->work(); });
  } catch (const std::system_error& e) {
    loop.removeSource(q->source_);
    q->source_ = 0;
    return makeError(std::string("cannot start the worker thread: ") + e.what(), EAGAIN);
  }
  return q;
}

WorkQueue::~WorkQueue() {
  if (source_) loop_.removeSource(source_);
  std::deque<Shared::Job> dropped, finished;
  bool idle = true;
  {
    std::unique_lock<std::mutex> l(s_->m);
    s_->stop = true;
    dropped.swap(s_->queued);
    s_->cv.notify_all();
    idle = s_->cv.wait_for(l, stopWait, [this] { return !s_->running; });
    if (!idle) s_->abandoned = true;
    finished.swap(s_->finished);
  }
  if (s_->thread.joinable()) {
    if (idle) {
      s_->thread.join();
    } else {
      spdlog::warn(
          "a block-device job is still stuck in the kernel after {} ms (a hung backing file?); "
          "exiting without it",
          stopWait.count());
      s_->thread.detach();
    }
  }
  // dropped and finished are destroyed here, on the loop thread.
}

bool WorkQueue::submit(Fn work, Fn done) {
  if (pending_ >= maxJobs_) return false;
  {
    std::lock_guard<std::mutex> l(s_->m);
    if (s_->stop) return false;
    s_->queued.push_back(Shared::Job{std::move(work), std::move(done)});
  }
  ++pending_;
  s_->cv.notify_all();
  return true;
}

void WorkQueue::deliver() {
  uint64_t n = 0;
  while (::read(s_->efd, &n, sizeof n) < 0 && errno == EINTR) {
  }
  std::deque<Shared::Job> ready;
  {
    std::lock_guard<std::mutex> l(s_->m);
    ready.swap(s_->finished);
  }
  for (auto& job : ready) {
    // Counted out first: a `done` may submit the next step of its call.
    if (pending_ > 0) --pending_;
    try {
      if (job.done) job.done();
    } catch (...) {
      spdlog::warn("a block-device job's completion threw; ignored");
    }
  }
}

}  // namespace cxiosync
