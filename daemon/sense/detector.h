// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The sync detector interface the event loop drives. A detector only observes: it reports
// which threads are inside sync-family syscalls (Syncer, policy/model/snapshot.h).
//
// Event-loop contract:
//   - fd() >= 0: add it to epoll (EPOLLIN); call onReadable() when it is readable.
//   - every tick (poll_interval_ms): call tick(DetectorTick). procfs scans /proc;
//     tracefs drains its pipe and reconciles its syncers against /proc (threads that died
//     inside the syscall, pid reuse, lost exits, missed enters).
//   - invariant (docs/architecture.md, "Detection"): a thread inside a watched call is in
//     syncers() within one tick and stays there until it leaves the call. So while any
//     syncer is known or any limit is boosted, both detectors look at /proc every tick:
//     a boost lifts the only finite limit, anyLimitedDirty() turns false, and a detector
//     that stopped looking then would drop the syncer the boost serves (the boost ends
//     "syncers-left" and starts again a tick later, every ~2 ticks for one sync).
//   - syncers(): the current set, for SnapshotBuilder::build().
//   - changed(): true when the set changed since the last call (resets the flag), so the
//     loop can re-plan promptly after onReadable().
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policy/config/knobs.h"
#include "policy/model/snapshot.h"
#include "policy/result.h"

namespace cxiosync {

// What the daemon knows at a tick that tells a detector how hard to look.
struct DetectorTick {
  // A cgroup with a finite write limit holds dirty/writeback pages
  // (SnapshotBuilder::anyLimitedDirty()): a sync could wait on a throttled cgroup now.
  bool limitedDirty = false;
  // A boost is in force (its limit is lifted, so limitedDirty may be false because of it).
  bool boosted = false;
  // The tick runs because an event changed the syncer set (tracefs enter/exit): plan the
  // boost first; a /proc rescan due now waits for the next timer tick (rescanPending()),
  // which comes within poll_interval_ms, so the invariant above still holds.
  bool deferRescan = false;
};

class SyncDetector {
 public:
  virtual ~SyncDetector() = default;
  virtual DetectorKind kind() const = 0;  // Tracefs or Procfs
  virtual int fd() const { return -1; }
  virtual void onReadable() {}
  virtual Status tick(const DetectorTick& t) = 0;
  virtual std::vector<Syncer> syncers() const = 0;
  // A /proc rescan is still owed (deferred, or the first ticks): the caller keeps ticking
  // at poll_interval_ms rather than its idle period.
  virtual bool rescanPending() const { return false; }
  // Lines read from the event pipe so far (0 without one): the daemon's drain timer runs
  // while this moves (daemon.cpp, drain timer).
  virtual uint64_t linesSeen() const { return 0; }
  bool changed() {
    bool c = changed_;
    changed_ = false;
    return c;
  }

 protected:
  void markChanged() { changed_ = true; }

 private:
  bool changed_ = false;
};

const char* detectorKindName(DetectorKind k);  // "auto", "tracefs", "procfs"

}  // namespace cxiosync
