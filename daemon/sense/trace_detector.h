// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// tracefs sync detector (preferred backend). Owns a private tracefs instance
// "cxiosync-<pid>" with sys_enter_*/sys_exit_* of the sync family and
// writeback/writeback_queue enabled, and reads its trace_pipe without blocking.
//
// Per thread: enter -> Syncer (pid, comm, cgroup read from /proc/TID/cgroup at once,
// /proc start time remembered); exit -> gone. writeback_queue reason=sync cgroup_ino=N on
// bdi X -> (N, X) added to Syncer.waitsOn of the emitting thread when it is a sync/syncfs
// syncer, else to every current sync/syncfs syncer; writeback_start reason=sync (the
// flusher's work for sync(2)'s wakeup_flusher_threads) -> to every current sync() caller.
// waitsOn is a lower bound: pages already under writeback when a sync starts are waited
// on without any event naming their cgroup. Never loses an exit: "[LOST n EVENTS]"
// triggers an immediate reconcile against /proc plus a /proc scan for missed entries, and
// reconcile() (called on every tick) drops threads that died, were reused (start time
// differs) or are no longer inside the syscall.
//
// Events alone do not keep the invariant of detector.h (every thread inside a watched call
// is known within one tick); the holes, and what closes them:
//   - a wakeup the pipe never gets (the ring buffer's poll wakeup has no writer-side
//     barrier, kernel/trace/ring_buffer.c "tight race": an event can sit unread until the
//     next one; VM 6.1, issue 15: a sync() unseen for 4 min) -> tick() drains the pipe;
//   - per-CPU buffers merged by the "local" trace clock, which is not synchronised across
//     CPUs: a thread that migrated can show its exit of call 1 after its enter of call 2
//     -> an exit drops a thread only when /proc does not show it blocked (D) in that very
//     syscall, and the next tick rescans /proc for untracked callers;
//   - an enter whose thread's /proc could not be read at once, and threads already inside
//     a call when the instance starts but running (R) at start()'s scan -> rescans at
//     tick while any syncer is known or any limit is boosted, after any exit, and for
//     the first kStartupRescans ticks.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/kernel/fs.h"
#include "daemon/kernel/proc_fs.h"
#include "daemon/kernel/trace_fs.h"
#include "daemon/sense/detector.h"
#include "daemon/sense/syscalls.h"

namespace cxiosync {

inline constexpr const char* kInstancePrefix = "cxiosync-";

struct TraceDetectorOptions {
  bool watchFsync = false;
  unsigned bufferSizeKb = 512;             // per CPU; events are few but bursts must fit
  std::string instanceName;                // default: "cxiosync-<getpid()>"
  const SyscallTable* syscalls = nullptr;  // default: hostSyscallTable()
  // tick() rescans /proc at most this often: ticks also run on every pipe wakeup, and a
  // storm of sync calls would otherwise walk every thread many times per poll period (VM
  // storm: 100-160 ms snapshots). The daemon passes poll_interval_ms.
  std::chrono::milliseconds rescanGap{0};
};

class TraceDetector : public SyncDetector {
 public:
  // Removes stale instances, creates the instance, sets buffer_size_kb, enables every
  // event and opens trace_pipe. On any failure removes what it created and returns the
  // error (message says which step), so `auto` can fall back to procfs.
  static Result<std::unique_ptr<TraceDetector>> start(TraceFs& tracefs, const ProcFs& proc,
                                                      TraceDetectorOptions options);
  // A detector without a tracefs instance: lines come only from feedLine() (tests).
  TraceDetector(const ProcFs& proc, TraceDetectorOptions options);
  ~TraceDetector() override;  // closes the pipe and removes the instance
  TraceDetector(const TraceDetector&) = delete;
  TraceDetector& operator=(const TraceDetector&) = delete;

  DetectorKind kind() const override { return DetectorKind::Tracefs; }
  int fd() const override { return pipe_.get(); }
  void onReadable() override { drain(); }
  // drain() + reconcile() + a /proc rescan for untracked callers when one may be missing
  // (something known or boosted, an exit since the last tick, the first ticks).
  Status tick(const DetectorTick& t) override;
  std::vector<Syncer> syncers() const override;
  bool rescanPending() const override {
    return rescanDue_ || !tracked_.empty() || startupTicks_ < kStartupRescans;
  }
  // Ticks after construction that rescan /proc whatever else: a caller that was running (R)
  // at start()'s scan, so /proc/TID/syscall said "running", is blocked in D a moment later.
  static constexpr unsigned kStartupRescans = 5;

  // Reads everything available from the pipe (non-blocking) and feeds it line by line.
  // Returns the number of complete lines processed.
  size_t drain();
  // One trace_pipe line (no trailing newline needed).
  void feedLine(std::string_view line);
  // Drops tracked threads that exited, were replaced (pid reuse) or left the syscall.
  Status reconcile();

  const std::string& instance() const { return instance_; }
  uint64_t lostEvents() const { return lostEvents_; }
  // Exits ignored because /proc showed the thread still blocked in that syscall, and
  // callers added by a tick's /proc rescan (each is a missed or misordered event).
  uint64_t exitsOverruled() const { return exitsOverruled_; }
  uint64_t foundByRescan() const { return foundByRescan_; }
  uint64_t linesSeen() const override { return lines_; }
  // The tracefs event names this detector enables ("syscalls/sys_enter_sync", ...).
  static std::vector<std::string> eventsFor(bool watchFsync);

  // Removes instances "cxiosync-<pid>" whose pid is not running (and is not selfPid).
  // Returns the names removed. Errors on single instances are skipped.
  static std::vector<std::string> removeStaleInstances(TraceFs& tracefs, const ProcFs& proc,
                                                       int64_t selfPid);

 private:
  struct Tracked {
    Syncer syncer;
    uint64_t startTimeTicks = 0;
    bool byRescan = false;  // found in /proc, its enter event not (yet) read
  };
  void onEnter(int64_t tid, const std::string& comm, SyncSyscall sc, std::optional<int64_t> fd,
               std::optional<TimePoint> at);
  void onExit(int64_t tid, SyncSyscall sc);
  void onWritebackQueue(int64_t tid, uint64_t cgroupIno, DevNum bdi);
  void onWritebackStart(std::string_view line);
  void onLost(uint64_t n);
  // Adds threads found inside a watched syscall in /proc; returns how many.
  size_t rescanProc();
  // /proc shows tid blocked (D) inside syscall sc, and it is the thread we track.
  bool blockedIn(int64_t tid, SyncSyscall sc, uint64_t startTimeTicks) const;

  const ProcFs& proc_;
  TraceDetectorOptions options_;
  const SyscallTable& table_;
  TraceFs* tracefs_ = nullptr;
  std::string instance_;
  UniqueFd pipe_;
  std::string partial_;  // incomplete line carried between reads
  std::map<int64_t, Tracked> tracked_;
  uint64_t lostEvents_ = 0;
  uint64_t lines_ = 0;
  uint64_t exitsOverruled_ = 0;
  uint64_t foundByRescan_ = 0;
  bool monoClock_ = false;  // trace_clock is "mono": event timestamps are steady_clock
  bool rescanDue_ = false;  // an exit since the last rescan: a misordered enter may hide
  TimePoint lastRescan_{};
  unsigned startupTicks_ = 0;
};

}  // namespace cxiosync
