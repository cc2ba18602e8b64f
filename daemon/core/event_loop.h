// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The daemon's one event loop: epoll over fds, timerfds and a signalfd, on one thread.
//
// Sources:
//   addIo(fd, events, callback, prepare)  any fd (inotify, the tracefs pipe, the sd-bus fd)
//   addTimer(first, interval, callback)   a CLOCK_MONOTONIC timerfd; interval 0 = one-shot
//   addSignals({SIGTERM, ...}, callback)  blocks the signals and reads them from a signalfd
//
// The prepare hook: before every epoll_wait the loop calls each source's prepare(); it may
// change the events the fd is watched for and ask for a timeout. If the timeout passes
// without the fd becoming ready, the callback runs with revents == 0. This is exactly what
// an sd-bus connection needs (sdbus-c++ 1.2):
//
//   auto id = loop.addIo(conn.getEventLoopPollData().fd, EPOLLIN,
//       [&](uint32_t) { while (conn.processPendingRequest()) {} },
//       [&]() -> EventLoop::Prepared {
//         auto pd = conn.getEventLoopPollData();
//         return {EventLoop::pollToEpoll(pd.events), pd.getRelativeTimeout()};  // usec
//       });
//
// sdbus-c++ 2.x (processPendingEvent) also needs PollData::eventFd watched for EPOLLIN, as a
// second source with the same callback (daemon/bus_backend.cpp, via dbus/sdbus_compat.h).
//
// Callbacks run on the loop thread, one at a time; they may add and remove sources
// (including their own) and call exit(). The loop does no disk I/O of its own.
#include <sys/epoll.h>
#include <sys/signalfd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "policy/result.h"

namespace cxiosync {

class EventLoop {
 public:
  using SourceId = uint64_t;
  using IoCallback = std::function<void(uint32_t revents)>;
  using TimerCallback = std::function<void()>;
  using SignalCallback = std::function<void(const signalfd_siginfo&)>;

  struct Prepared {
    uint32_t events = EPOLLIN;
    // Relative timeout; nullopt = none.
    std::optional<std::chrono::microseconds> timeout;
  };
  using PrepareHook = std::function<Prepared()>;

  static Result<std::unique_ptr<EventLoop>> create();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // The fd stays owned by the caller and must stay open until removeSource().
  Result<SourceId> addIo(int fd, uint32_t events, IoCallback cb, PrepareHook prepare = {});
  Status setIoEvents(SourceId id, uint32_t events);

  // First expiry after `first` (0 = as soon as possible), then every `interval` (0 = once).
  Result<SourceId> addTimer(std::chrono::nanoseconds first, std::chrono::nanoseconds interval,
                            TimerCallback cb);
  // Re-arms an existing timer (first == 0 and interval == 0 disarms it).
  Status setTimer(SourceId id, std::chrono::nanoseconds first, std::chrono::nanoseconds interval);

  // Blocks `signals` in this thread (sigprocmask) and delivers them through a signalfd.
  Result<SourceId> addSignals(const std::vector<int>& signals, SignalCallback cb);

  // Removes any source (closes the loop's own timerfd/signalfd; never the caller's io fd).
  void removeSource(SourceId id);

  // Runs until exit() is called; returns the exit code. Fails on an epoll error.
  Result<int> run();
  // Runs one iteration (waits at most `maxWait`, dispatches what is ready). For tests.
  Status runOnce(std::optional<std::chrono::milliseconds> maxWait);
  void exit(int code);
  bool exiting() const { return exiting_; }

  // POLLIN/POLLOUT/... (poll(2) bits, as sd-bus reports them) to EPOLL* bits.
  static uint32_t pollToEpoll(short pollEvents);

  size_t sourceCount() const { return sources_.size(); }

 private:
  enum class Kind { Io, Timer, Signal };
  struct Source {
    Kind kind;
    int fd = -1;
    bool ownsFd = false;
    uint32_t events = 0;
    IoCallback io;
    PrepareHook prepare;
    TimerCallback timer;
    SignalCallback signal;
    std::optional<std::chrono::steady_clock::time_point> deadline;  // from prepare
    std::vector<int> signals;
  };
  explicit EventLoop(int epfd);
  Result<SourceId> addSource(std::shared_ptr<Source> s);
  void dispatch(SourceId id, uint32_t revents);

  int epfd_;
  SourceId next_ = 1;
  std::map<SourceId, std::shared_ptr<Source>> sources_;
  bool exiting_ = false;
  int exitCode_ = 0;
};

}  // namespace cxiosync
