// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The sync detector interface the event loop drives. A detector only observes: it reports
// which threads are inside sync-family syscalls (Syncer, policy/model/snapshot.h).
//
// Event-loop contract:
//   - fd() >= 0: add it to epoll (EPOLLIN); call onReadable() when it is readable.
//   - every tick (poll_interval_ms): call tick(anythingCanMatter). procfs scans /proc;
//     tracefs reconciles its syncers against /proc (threads that died inside the syscall,
//     pid reuse, lost exits). Pass anythingCanMatter = false when no cgroup with a finite
//     write limit has dirty or writeback pages (SnapshotBuilder::anyLimitedDirty()): the
//     procfs detector then does no per-thread work and reports no syncers.
//   - syncers(): the current set, for SnapshotBuilder::build().
//   - changed(): true when the set changed since the last call (resets the flag), so the
//     loop can re-plan promptly after onReadable().
#include <memory>
#include <string>
#include <vector>

#include "policy/config/knobs.h"
#include "policy/model/snapshot.h"
#include "policy/result.h"

namespace cxiosync {

class SyncDetector {
 public:
  virtual ~SyncDetector() = default;
  virtual DetectorKind kind() const = 0;  // Tracefs or Procfs
  virtual int fd() const { return -1; }
  virtual void onReadable() {}
  virtual Status tick(bool anythingCanMatter) = 0;
  virtual std::vector<Syncer> syncers() const = 0;
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
