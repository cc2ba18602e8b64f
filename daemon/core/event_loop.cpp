// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/core/event_loop.h"

#include <poll.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cxiosync {
namespace {

Error sysErr(const char* what) {
  return makeError(std::string(what) + ": " + strerror(errno), errno);
}

itimerspec toSpec(std::chrono::nanoseconds first, std::chrono::nanoseconds interval) {
  itimerspec spec{};
  auto set = [](timespec& ts, std::chrono::nanoseconds ns) {
    ts.tv_sec = static_cast<time_t>(ns.count() / 1000000000);
    ts.tv_nsec = static_cast<long>(ns.count() % 1000000000);
  };
  // it_value == 0 would disarm; "as soon as possible" is 1 ns.
  set(spec.it_value, first.count() > 0 ? first : std::chrono::nanoseconds(1));
  set(spec.it_interval, interval);
  return spec;
}

}  // namespace

Result<std::unique_ptr<EventLoop>> EventLoop::create() {
  int fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) return sysErr("epoll_create1");
  return std::unique_ptr<EventLoop>(new EventLoop(fd));
}

EventLoop::EventLoop(int epfd) : epfd_(epfd) {}

EventLoop::~EventLoop() {
  for (auto& [id, s] : sources_) {
    if (s->ownsFd) ::close(s->fd);
    if (s->kind == Kind::Signal) {
      sigset_t set;
      sigemptyset(&set);
      for (int sig : s->signals) sigaddset(&set, sig);
      ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    }
  }
  ::close(epfd_);
}

uint32_t EventLoop::pollToEpoll(short pollEvents) {
  uint32_t e = 0;
  if (pollEvents & POLLIN) e |= EPOLLIN;
  if (pollEvents & POLLOUT) e |= EPOLLOUT;
  if (pollEvents & POLLPRI) e |= EPOLLPRI;
  if (pollEvents & POLLRDHUP) e |= EPOLLRDHUP;
  return e;
}

Result<EventLoop::SourceId> EventLoop::addSource(std::shared_ptr<Source> s) {
  SourceId id = next_++;
  epoll_event ev{};
  ev.events = s->events;
  ev.data.u64 = id;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, s->fd, &ev) != 0) return sysErr("epoll_ctl ADD");
  sources_.emplace(id, std::move(s));
  return id;
}

Result<EventLoop::SourceId> EventLoop::addIo(int fd, uint32_t events, IoCallback cb,
                                             PrepareHook prepare) {
  auto s = std::make_shared<Source>();
  s->kind = Kind::Io;
  s->fd = fd;
  s->events = events;
  s->io = std::move(cb);
  s->prepare = std::move(prepare);
  return addSource(std::move(s));
}

Status EventLoop::setIoEvents(SourceId id, uint32_t events) {
  auto it = sources_.find(id);
  if (it == sources_.end()) return makeError("no such event source", ENOENT);
  if (it->second->events == events) return Ok{};
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = id;
  if (::epoll_ctl(epfd_, EPOLL_CTL_MOD, it->second->fd, &ev) != 0) return sysErr("epoll_ctl MOD");
  it->second->events = events;
  return Ok{};
}

Result<EventLoop::SourceId> EventLoop::addTimer(std::chrono::nanoseconds first,
                                                std::chrono::nanoseconds interval,
                                                TimerCallback cb) {
  int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (fd < 0) return sysErr("timerfd_create");
  itimerspec spec = toSpec(first, interval);
  if (::timerfd_settime(fd, 0, &spec, nullptr) != 0) {
    auto e = sysErr("timerfd_settime");
    ::close(fd);
    return e;
  }
  auto s = std::make_shared<Source>();
  s->kind = Kind::Timer;
  s->fd = fd;
  s->ownsFd = true;
  s->events = EPOLLIN;
  s->timer = std::move(cb);
  auto id = addSource(s);
  if (!id) ::close(fd);
  return id;
}

Status EventLoop::setTimer(SourceId id, std::chrono::nanoseconds first,
                           std::chrono::nanoseconds interval) {
  auto it = sources_.find(id);
  if (it == sources_.end() || it->second->kind != Kind::Timer)
    return makeError("no such timer", ENOENT);
  itimerspec spec{};
  if (first.count() != 0 || interval.count() != 0) spec = toSpec(first, interval);
  if (::timerfd_settime(it->second->fd, 0, &spec, nullptr) != 0) return sysErr("timerfd_settime");
  return Ok{};
}

Result<EventLoop::SourceId> EventLoop::addSignals(const std::vector<int>& signals,
                                                  SignalCallback cb) {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : signals) sigaddset(&set, sig);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return sysErr("sigprocmask");
  int fd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) return sysErr("signalfd");
  auto s = std::make_shared<Source>();
  s->kind = Kind::Signal;
  s->fd = fd;
  s->ownsFd = true;
  s->events = EPOLLIN;
  s->signal = std::move(cb);
  s->signals = signals;
  auto id = addSource(s);
  if (!id) ::close(fd);
  return id;
}

void EventLoop::removeSource(SourceId id) {
  auto it = sources_.find(id);
  if (it == sources_.end()) return;
  auto s = it->second;
  (void)::epoll_ctl(epfd_, EPOLL_CTL_DEL, s->fd, nullptr);
  if (s->ownsFd) ::close(s->fd);
  if (s->kind == Kind::Signal) {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : s->signals) sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  }
  sources_.erase(it);
}

void EventLoop::exit(int code) {
  exiting_ = true;
  exitCode_ = code;
}

void EventLoop::dispatch(SourceId id, uint32_t revents) {
  auto it = sources_.find(id);
  if (it == sources_.end()) return;        // removed by an earlier callback in this batch
  std::shared_ptr<Source> s = it->second;  // keeps the callback alive if it removes itself
  switch (s->kind) {
    case Kind::Io:
      s->io(revents);
      break;
    case Kind::Timer: {
      uint64_t expirations = 0;
      ssize_t n = ::read(s->fd, &expirations, sizeof expirations);
      if (n != sizeof expirations) return;  // spurious (EAGAIN after a re-arm)
      s->timer();
      break;
    }
    case Kind::Signal: {
      signalfd_siginfo si;
      while (::read(s->fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        s->signal(si);
        if (sources_.find(id) == sources_.end()) break;
      }
      break;
    }
  }
}

Status EventLoop::runOnce(std::optional<std::chrono::milliseconds> maxWait) {
  using SteadyClock = std::chrono::steady_clock;
  auto now = SteadyClock::now();
  std::optional<SteadyClock::time_point> wakeAt;
  if (maxWait) wakeAt = now + *maxWait;
  // Prepare hooks (copy the ids: a hook must not, but could, change the source set).
  std::vector<SourceId> ids;
  for (auto& [id, s] : sources_)
    if (s->prepare) ids.push_back(id);
  for (SourceId id : ids) {
    auto it = sources_.find(id);
    if (it == sources_.end()) continue;
    Prepared p = it->second->prepare();
    if (auto st = setIoEvents(id, p.events); !st) return st;
    it->second->deadline.reset();
    if (p.timeout) {
      it->second->deadline = now + *p.timeout;
      if (!wakeAt || *it->second->deadline < *wakeAt) wakeAt = *it->second->deadline;
    }
  }
  int timeoutMs = -1;
  if (wakeAt) {
    auto delta = std::chrono::ceil<std::chrono::milliseconds>(*wakeAt - now).count();
    timeoutMs = delta < 0 ? 0 : static_cast<int>(std::min<int64_t>(delta, INT32_MAX));
  }
  epoll_event events[32];
  int n = ::epoll_wait(epfd_, events, 32, timeoutMs);
  if (n < 0) {
    if (errno == EINTR) return Ok{};
    return sysErr("epoll_wait");
  }
  std::vector<SourceId> fired;
  for (int i = 0; i < n; ++i) {
    fired.push_back(events[i].data.u64);
    dispatch(events[i].data.u64, events[i].events);
    if (exiting_) return Ok{};
  }
  // Prepared timeouts that passed without their fd firing.
  now = SteadyClock::now();
  ids.clear();
  for (auto& [id, s] : sources_)
    if (s->deadline && *s->deadline <= now &&
        std::find(fired.begin(), fired.end(), id) == fired.end())
      ids.push_back(id);
  for (SourceId id : ids) {
    auto it = sources_.find(id);
    if (it == sources_.end()) continue;
    it->second->deadline.reset();
    dispatch(id, 0);
    if (exiting_) return Ok{};
  }
  return Ok{};
}

Result<int> EventLoop::run() {
  while (!exiting_) {
    if (auto st = runOnce(std::nullopt); !st) return st.error();
  }
  return exitCode_;
}

}  // namespace cxiosync
