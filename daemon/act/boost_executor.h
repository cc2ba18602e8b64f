// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The boost executor: the only code that writes io.max. It turns planner decisions into
// journaled, read-back-verified io.max writes and restores them compare-and-restore
// (docs/architecture.md §4.4-4.6). Single-threaded: called from the event loop only.
//
// Invariant: whenever io.max of a cgroup holds a value the daemon wrote, the journal holds a
// record with the value that was there before. Order for a boost: journal record (temp +
// rename) -> write io.max -> read back. If the journal cannot be written, nothing is written
// to io.max. Records leave the journal only after the original is back, or after someone
// else's value has replaced ours (theirs is kept), or when the cgroup is gone.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/act/journal.h"
#include "policy/planner/decision.h"
#include "policy/result.h"

namespace cxiosync {

class CgroupFs;

// io.max of one cgroup for one device, as the executor needs it. Implemented over CgroupFs
// (makeCgroupFsIoMax) and by fakes in tests.
class IoMaxAccess {
 public:
  virtual ~IoMaxAccess() = default;

  struct Current {
    uint64_t inode = 0;              // cgroup directory inode (0 = unknown)
    std::optional<IoMaxEntry> line;  // nullopt: no line for the device = unlimited
  };
  // Gone errors (ENOENT/ENODEV/ESTALE) when the cgroup does not exist, or when
  // `expectedInode` != 0 and the directory now has another inode.
  virtual Result<Current> read(const CgroupPath& cgroup, const DevNum& dev,
                               uint64_t expectedInode) = 0;
  // Writes one line (only the keys present) and returns what reads back afterwards.
  virtual Result<std::optional<IoMaxEntry>> write(const CgroupPath& cgroup, uint64_t expectedInode,
                                                  const IoMaxEntry& entry) = 0;
};

// The production IoMaxAccess over the sensing layer's CgroupFs (not owned).
std::unique_ptr<IoMaxAccess> makeCgroupFsIoMax(const CgroupFs& fs);

// All four keys, absent/no line = kUnlimited.
IoLimits fullLimits(const std::optional<IoMaxEntry>& line);
// `base` with every key present in `patch` replaced.
IoLimits overlayLimits(IoLimits base, const IoLimits& patch);
// "wbps 1048576 -> max, wiops max -> max" style text, only the keys that differ (or all
// when none differ).
std::string describeLimitChange(const IoLimits& from, const IoLimits& to);
std::string formatLimit(uint64_t v);  // "max" or the number

bool isGoneCode(int code);

class BoostExecutor {
 public:
  BoostExecutor(IoMaxAccess& io, Journal& journal, bool dryRun);

  struct RecoverySummary {
    size_t restored = 0;                    // original written back
    size_t keptChanged = 0;                 // someone else's value was there: kept
    size_t gone = 0;                        // cgroup vanished
    size_t failed = 0;                      // could not restore: record kept for a retry
    std::optional<std::string> movedAside;  // corrupt journal renamed to this
    size_t unreadable = 0;                  // records kept unread: their cgroups not boosted
  };
  // Startup, before READY=1: restores every journaled boost (compare-and-restore). Records
  // that cannot be restored now (I/O error) stay in the journal and in active(). Fails only
  // when the journal can neither be read nor moved aside: then nothing may be boosted.
  Result<RecoverySummary> recover(TimePoint now);

  // Boost: journal -> write -> read back. Refuses (error, nothing written) when the journal
  // cannot be written, when the cgroup already carries a boost for the device, when the
  // journal holds a record for it that cannot be read (EBUSY: its io.max may be a value a
  // daemon lifted, which must never be recorded as an original), or when the boosted value
  // is not higher. In dry-run mode only logs.
  Status start(const StartBoost& d, TimePoint now, bool shutdownLift = false);
  // Compare-and-restore one boost (keyed by cgroup + device).
  Status restore(const RestoreBoost& d, TimePoint now);
  // New syncer set for a boost (journal only).
  void update(const UpdateBoost& d);
  // Clean stop: restore every boost that is not a shutdown lift. Returns how many remain.
  size_t restoreAll(EndReason why, TimePoint now);

  // Boosts in force, as the planner wants them.
  std::vector<ActiveBoost> active() const;
  size_t activeCount() const { return records_.size(); }
  bool dryRun() const { return dryRun_; }
  void setDryRun(bool on) { dryRun_ = on; }

  // Counters for metrics.
  struct Stats {
    std::map<std::string, uint64_t> boostsBySyscall;  // boosts started, by trigger syscall
    std::map<std::string, uint64_t> endsByReason;     // boosts ended, by EndReason name
    uint64_t keptChanged = 0;                         // restores skipped: changed by others
    uint64_t failures = 0;                            // write/journal failures
    double boostSecondsTotal = 0;                     // finished boosts only
  };
  const Stats& stats() const { return stats_; }
  // Seconds of boosts still in force (for the boost-seconds metric).
  double activeBoostSeconds(TimePoint now) const;

 private:
  enum class RestoreOutcome { Restored, KeptChanged, Gone, Failed };
  RestoreOutcome restoreOne(const JournalRecord& rec, const char* why, TimePoint now);
  Status persist();
  void recoverUnreadable(const std::vector<UnreadableRecord>& unreadable, RecoverySummary& summary);
  const UnreadableRecord* heldBack(const CgroupPath& cg, const DevNum& dev) const;
  std::vector<JournalRecord>::iterator find(const CgroupPath& cg, const DevNum& dev);

  IoMaxAccess& io_;
  Journal& journal_;
  bool dryRun_;
  std::vector<JournalRecord> records_;
  Stats stats_;
};

}  // namespace cxiosync
