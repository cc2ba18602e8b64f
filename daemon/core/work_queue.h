// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// WorkQueue: work that may block for a long time (loop and nbd device operations: ioctls,
// device-node waits, EBUSY retries, fstat/statx on a caller's descriptor, which on a FUSE
// file can hang for ever) runs on one worker thread, never on the event loop, which must stay
// free to restore boosts on time (docs/architecture.md §6, "Runtime shape").
//
//   submit(work, done): `work` runs on the worker, jobs one at a time in submission order;
//   afterwards `done` runs on the loop thread (an eventfd wakes the loop). Shared state is
//   touched only in `done`; `work` sees its inputs and writes its result into a box both
//   closures share. Both closures are destroyed on the loop thread, so they may hold objects
//   (D-Bus replies) that must not be touched elsewhere.
//
// Bounded: at most maxJobs submitted and not yet done; submit() returns false beyond that
// (the caller answers Busy). One worker, not a pool: the block-device managers keep their
// ownership records in files that are read-modified-written without a lock, so mutations
// stay serial. A job that hangs stalls the jobs behind it (never the loop).
//
// Threading: create, submit, pending and destruction on the loop thread only.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

#include "daemon/core/event_loop.h"
#include "policy/result.h"

namespace cxiosync {

class WorkQueue {
 public:
  using Fn = std::function<void()>;

  static Result<std::unique_ptr<WorkQueue>> create(EventLoop& loop, size_t maxJobs);
  // Drops jobs not started (their `done` never runs), waits up to stopWait for the running
  // one, and if it is still stuck in the kernel leaves the thread behind (logged): a hung
  // FUSE file must not keep the daemon from stopping.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // false: maxJobs are pending already (nothing was queued).
  bool submit(Fn work, Fn done);
  // Submitted and whose `done` has not run yet.
  size_t pending() const { return pending_; }
  size_t maxJobs() const { return maxJobs_; }

  std::chrono::milliseconds stopWait{2000};

  struct Shared;

 private:
  WorkQueue(EventLoop& loop, std::shared_ptr<Shared> s, size_t maxJobs);
  void deliver();

  EventLoop& loop_;
  std::shared_ptr<Shared> s_;
  size_t maxJobs_;
  size_t pending_ = 0;
  EventLoop::SourceId source_ = 0;
};

}  // namespace cxiosync
