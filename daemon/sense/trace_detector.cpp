// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sense/trace_detector.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "daemon/sense/proc_detector.h"
#include "policy/formats/trace_event.h"

namespace cxiosync {

namespace {

constexpr uint64_t kMsSync = 4;

// msync's enter line: "sys_msync(start: 7f.., len: 1000, flags: 4)". nullopt if absent.
std::optional<uint64_t> flagsArg(std::string_view line) {
  auto pos = line.rfind("flags: ");
  if (pos == std::string_view::npos) return std::nullopt;
  std::string_view v = line.substr(pos + 7);
  int base = 16;  // the syscall tracepoints print every argument in hex, "0x" optional
  if (v.substr(0, 2) == "0x") v.remove_prefix(2);
  uint64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
  if (ec != std::errc()) return std::nullopt;
  (void)p;
  return out;
}

bool waitsOnWriteback(SyncSyscall s) {
  return s == SyncSyscall::Sync || s == SyncSyscall::Syncfs;
}

}  // namespace

std::vector<std::string> TraceDetector::eventsFor(bool watchFsync) {
  std::vector<std::string> out;
  for (auto s : {SyncSyscall::Sync, SyncSyscall::Syncfs, SyncSyscall::Fsync, SyncSyscall::Fdatasync,
                 SyncSyscall::SyncFileRange, SyncSyscall::Msync}) {
    if (!isWatched(s, watchFsync)) continue;
    out.push_back(std::string("syscalls/sys_enter_") + syncSyscallName(s));
    out.push_back(std::string("syscalls/sys_exit_") + syncSyscallName(s));
  }
  out.push_back("writeback/writeback_queue");
  // sync(2) first wakes every flusher (wakeup_flusher_threads, WB_REASON_SYNC): the
  // flusher's "start all" work shows as writeback_start reason=sync for each wb that had
  // dirty inodes. When the flusher has already moved them all under writeback by the time
  // sync queues its own works, there is no writeback_queue for that cgroup at all.
  out.push_back("writeback/writeback_start");
  return out;
}

TraceDetector::TraceDetector(const ProcFs& proc, TraceDetectorOptions options)
    : proc_(proc),
      options_(std::move(options)),
      table_(options_.syscalls ? *options_.syscalls : hostSyscallTable()) {}

TraceDetector::~TraceDetector() {
  pipe_.reset();
  if (tracefs_ && !instance_.empty()) {
    (void)tracefs_->setTracingOn(instance_, false);
    (void)tracefs_->removeInstance(instance_);
  }
}

std::vector<std::string> TraceDetector::removeStaleInstances(TraceFs& tracefs, const ProcFs& proc,
                                                             int64_t selfPid) {
  std::vector<std::string> removed;
  auto names = tracefs.listInstances();
  if (!names) return removed;
  const std::string prefix = kInstancePrefix;
  for (const auto& name : *names) {
    if (name.rfind(prefix, 0) != 0) continue;
    int64_t pid = parseDecimalName(std::string_view(name).substr(prefix.size()));
    if (pid <= 0) continue;
    bool stale = pid == selfPid;  // ours can only be left over from a previous life
    if (!stale) {
      auto st = proc.readThreadStat(pid);
      // Gone, or the pid now belongs to something that is not a cxiosync process.
      stale = (!st && isGone(st.error())) || (st && st->comm.rfind("cxiosync", 0) != 0);
    }
    if (stale && tracefs.removeInstance(name)) removed.push_back(name);
  }
  return removed;
}

Result<std::unique_ptr<TraceDetector>> TraceDetector::start(TraceFs& tracefs, const ProcFs& proc,
                                                            TraceDetectorOptions options) {
  const int64_t self = ::getpid();
  if (options.instanceName.empty()) {
    options.instanceName = std::string(kInstancePrefix) + std::to_string(self);
  }
  removeStaleInstances(tracefs, proc, self);
  std::string name = options.instanceName;
  if (auto st = tracefs.createInstance(name); !st) {
    if (st.error().code != EEXIST) return st.error();
    if (auto rm = tracefs.removeInstance(name); !rm) return rm.error();
    if (auto again = tracefs.createInstance(name); !again) return again.error();
  }
  auto det = std::make_unique<TraceDetector>(proc, std::move(options));
  det->tracefs_ = &tracefs;
  det->instance_ = name;  // from here on the destructor removes the instance
  if (auto st = tracefs.setTracingOn(name, false); !st) return st.error();
  if (auto st = tracefs.setBufferSizeKb(name, det->options_.bufferSizeKb); !st) {
    return st.error();
  }
  // Wake the reader on every event; older kernels have no buffer_percent (fine).
  if (auto st = tracefs.setBufferPercent(name, 0); !st && st.error().code != ENOENT) {
    return st.error();
  }
  // One clock for every CPU's buffer, and the kernel's event time on our steady_clock (the
  // detection-to-boost split). Without it ("local", the default) nothing breaks: reconcile()
  // already overrules misordered exits, and the split leaves out the kernel's part.
  det->monoClock_ = static_cast<bool>(tracefs.setTraceClock(name, "mono"));
  for (const auto& ev : eventsFor(det->options_.watchFsync)) {
    if (auto st = tracefs.setEventEnabled(name, ev, true); !st) return st.error();
  }
  auto pipe = tracefs.openPipe(name);
  if (!pipe) return pipe.error();
  det->pipe_ = std::move(*pipe);
  if (auto st = tracefs.setTracingOn(name, true); !st) return st.error();
  // Threads already inside sync() when we start produced their enter event before the
  // instance existed: pick them up from /proc.
  det->rescanProc();
  return det;
}

std::vector<Syncer> TraceDetector::syncers() const {
  std::vector<Syncer> out;
  out.reserve(tracked_.size());
  for (const auto& [tid, t] : tracked_) out.push_back(t.syncer);
  return out;
}

size_t TraceDetector::drain() {
  if (!pipe_.valid()) return 0;
  size_t before = lines_;
  char buf[16384];
  while (true) {
    ssize_t n = ::read(pipe_.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // EAGAIN: drained
    }
    if (n == 0) break;
    partial_.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    while (true) {
      size_t eol = partial_.find('\n', start);
      if (eol == std::string::npos) break;
      feedLine(std::string_view(partial_).substr(start, eol - start));
      start = eol + 1;
    }
    partial_.erase(0, start);
    if (partial_.size() > 65536) partial_.clear();  // not a trace line; resynchronise
  }
  return lines_ - before;
}

void TraceDetector::feedLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty()) return;
  ++lines_;
  auto ev = parseTraceLine(line);
  if (!ev) return;
  switch (ev->kind) {
    case TraceEvent::Kind::SyscallEnter: {
      auto sc = syncSyscallFromText(ev->syscall);
      if (!sc || !isWatched(*sc, options_.watchFsync)) return;
      if (*sc == SyncSyscall::Msync) {
        auto flags = flagsArg(line);
        if (flags && (*flags & kMsSync) == 0) return;
      }
      std::optional<TimePoint> at;
      if (monoClock_ && ev->timestampUsec)
        at = TimePoint(std::chrono::microseconds(ev->timestampUsec));
      onEnter(ev->tid, ev->comm, *sc, ev->fd, at);
      return;
    }
    case TraceEvent::Kind::SyscallExit: {
      auto sc = syncSyscallFromText(ev->syscall);
      if (sc) onExit(ev->tid, *sc);
      return;
    }
    case TraceEvent::Kind::WritebackQueue:
      if (ev->reason == "sync" && ev->cgroupIno && ev->bdi) {
        onWritebackQueue(ev->tid, *ev->cgroupIno, *ev->bdi);
      }
      return;
    case TraceEvent::Kind::LostEvents:
      onLost(ev->lostEvents);
      return;
    case TraceEvent::Kind::Other:
      if (ev->body.rfind("writeback_start: ", 0) == 0) onWritebackStart(line);
      return;
  }
}

void TraceDetector::onEnter(int64_t tid, const std::string& comm, SyncSyscall sc,
                            std::optional<int64_t> fd, std::optional<TimePoint> at) {
  // Read the thread's identity now, while it is (very likely) still inside the syscall.
  auto stat = proc_.readThreadStat(tid);
  if (!stat) return;  // already gone: its exit (if any) follows and is ignored
  auto cg = proc_.readThreadCgroup(tid);
  if (!cg || !*cg) return;
  Tracked t;
  t.startTimeTicks = stat->startTimeTicks;
  Syncer& s = t.syncer;
  s.tid = tid;
  auto tgid = proc_.readThreadTgid(tid);
  s.pid = tgid ? *tgid : tid;
  s.comm = stat->comm.empty() ? comm : stat->comm;
  s.cgroup = **cg;
  s.syscall = sc;
  s.since = Clock::now();
  if (at && *at <= s.since) s.entered = at;
  if (fd && takesFd(sc)) {
    auto dev = proc_.fdDevice(tid, *fd);
    if (dev) s.targetDevice = *dev;
  }
  auto known = tracked_.find(tid);
  if (known != tracked_.end() && known->second.byRescan &&
      known->second.startTimeTicks == t.startTimeTicks && known->second.syncer.syscall == sc) {
    // A rescan found it before its enter was read: the same call, not a new one.
    known->second.byRescan = false;
    return;
  }
  tracked_[tid] = std::move(t);
  markChanged();
}

bool TraceDetector::blockedIn(int64_t tid, SyncSyscall sc, uint64_t startTimeTicks) const {
  auto stat = proc_.readThreadStat(tid);
  if (!stat || stat->state != 'D' || stat->startTimeTicks != startTimeTicks) return false;
  auto now = proc_.readThreadSyscall(tid);
  return now && now->kind == ProcSyscall::Kind::InSyscall && now->nr == table_.numberOf(sc);
}

void TraceDetector::onExit(int64_t tid, SyncSyscall sc) {
  auto it = tracked_.find(tid);
  if (it == tracked_.end()) return;
  rescanDue_ = true;
  // The exit of an earlier call merged after the enter of this one (per-CPU clocks), or of
  // another syscall than the one tracked: /proc, not the event order, decides (reconcile
  // drops the thread at the next tick if it has left). A thread in the exit path is not
  // blocked in D, so a real exit is never overruled.
  if (it->second.syncer.syscall != sc ||
      blockedIn(tid, it->second.syncer.syscall, it->second.startTimeTicks)) {
    ++exitsOverruled_;
    return;
  }
  tracked_.erase(it);
  markChanged();
}

void TraceDetector::onWritebackQueue(int64_t tid, uint64_t cgroupIno, DevNum bdi) {
  auto add = [&](Syncer& s) {
    std::pair<uint64_t, DevNum> w{cgroupIno, bdi};
    if (std::find(s.waitsOn.begin(), s.waitsOn.end(), w) == s.waitsOn.end()) {
      s.waitsOn.push_back(w);
      markChanged();
    }
  };
  auto it = tracked_.find(tid);
  if (it != tracked_.end() && waitsOnWriteback(it->second.syncer.syscall)) {
    add(it->second.syncer);
    return;
  }
  for (auto& [t, tr] : tracked_) {
    if (waitsOnWriteback(tr.syncer.syscall)) add(tr.syncer);
  }
}

void TraceDetector::onWritebackStart(std::string_view line) {
  // Same event class and format as writeback_queue (writeback_work_class): reuse its parser.
  auto pos = line.find("writeback_start: ");
  if (pos == std::string_view::npos) return;
  std::string copy(line);
  copy.replace(pos, std::strlen("writeback_start"), "writeback_queue");
  auto ev = parseTraceLine(copy);
  if (!ev || ev->kind != TraceEvent::Kind::WritebackQueue) return;
  if (ev->reason != "sync" || !ev->cgroupIno || !ev->bdi) return;
  // Emitted by a flusher kworker for sync(2)'s wakeup: every current sync() caller.
  for (auto& [t, tr] : tracked_) {
    if (tr.syncer.syscall != SyncSyscall::Sync) continue;
    std::pair<uint64_t, DevNum> w{*ev->cgroupIno, *ev->bdi};
    auto& v = tr.syncer.waitsOn;
    if (std::find(v.begin(), v.end(), w) == v.end()) {
      v.push_back(w);
      markChanged();
    }
  }
}

void TraceDetector::onLost(uint64_t n) {
  lostEvents_ += n ? n : 1;
  (void)reconcile();
  rescanProc();
}

size_t TraceDetector::rescanProc() {
  ProcDetectorOptions po;
  po.watchFsync = options_.watchFsync;
  po.syscalls = &table_;
  ProcDetector scan(proc_, po);
  if (!scan.scan(true)) return 0;
  size_t added = 0;
  for (auto& s : scan.syncers()) {
    if (tracked_.count(s.tid)) continue;
    auto stat = proc_.readThreadStat(s.tid);
    if (!stat) continue;
    Tracked t;
    t.startTimeTicks = stat->startTimeTicks;
    t.syncer = std::move(s);
    t.byRescan = true;
    tracked_[t.syncer.tid] = std::move(t);
    ++added;
    markChanged();
  }
  return added;
}

Status TraceDetector::tick(const DetectorTick& t) {
  drain();
  auto st = reconcile();
  // An event-driven tick (a sync just entered) plans without walking every thread of the
  // system first: that walk was most of the detection-to-boost time (issue 15, VM: tens of
  // ms under TCG). The timer tick that follows within poll_interval_ms does it.
  if (t.deferRescan) {
    if (t.boosted) rescanDue_ = true;
    return st;
  }
  const bool startup = startupTicks_ < kStartupRescans;
  if (startup) ++startupTicks_;
  const TimePoint now = Clock::now();
  if ((!tracked_.empty() || t.boosted || rescanDue_ || startup) &&
      now - lastRescan_ >= options_.rescanGap) {
    rescanDue_ = false;
    lastRescan_ = now;
    foundByRescan_ += rescanProc();
  }
  return st;
}

Status TraceDetector::reconcile() {
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    const int64_t tid = it->first;
    const Tracked& t = it->second;
    bool keep = true;
    auto stat = proc_.readThreadStat(tid);
    if (!stat) {
      keep = !isGone(stat.error());
    } else if (stat->startTimeTicks != t.startTimeTicks || stat->state == 'Z' ||
               stat->state == 'X') {
      keep = false;  // died inside the syscall, or the tid now names another thread
    } else {
      auto sc = proc_.readThreadSyscall(tid);
      if (!sc) {
        keep = !isGone(sc.error());
      } else if (sc->kind == ProcSyscall::Kind::NotInSyscall) {
        keep = false;
      } else if (sc->kind == ProcSyscall::Kind::InSyscall) {
        keep = sc->nr == table_.numberOf(t.syncer.syscall);
      }  // Running: cannot tell; the exit event or the next reconcile decides
    }
    if (keep) {
      ++it;
    } else {
      it = tracked_.erase(it);
      markChanged();
    }
  }
  return Ok{};
}

}  // namespace cxiosync
