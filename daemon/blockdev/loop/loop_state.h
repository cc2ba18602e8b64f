// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Ownership of loop devices cxiosync created: who asked (uid), when, with which options, and
// which backing file (st_dev + inode) — persisted in <run-dir>/loops.json (tmpfs; written to a
// temp file and renamed), reconciled with the kernel at startup.
//
// The daemon and the cxiosync-loop development tool may both change the file: every
// read-modify-write holds an exclusive flock(2) on <run-dir>/loops.lock.
#include <map>
#include <string>
#include <vector>

#include "daemon/blockdev/loop_types.h"
#include "daemon/kernel/fs.h"

namespace cxiosync {

inline constexpr const char* kDefaultRunDir = "/run/cxiosync";
inline constexpr const char* kLoopStateFile = "loops.json";
inline constexpr const char* kLoopLockFile = "loops.lock";

std::string loopRecordsToJson(const std::vector<LoopRecord>& records);
// EINVAL with a message when the text is not a JSON object with a "loops" array. Records are
// read one by one: one that cannot be read is left out, and why is added to `skipped`;
// unknown keys and a newer "version" are ignored (forward compatible). backing_file is bytes
// (policy/json.h).
Result<std::vector<LoopRecord>> loopRecordsFromJson(const std::string& text,
                                                    std::vector<std::string>* skipped = nullptr);

class LoopStateStore {
 public:
  explicit LoopStateStore(std::string runDir = kDefaultRunDir) : runDir_(std::move(runDir)) {}
  const std::string& runDir() const { return runDir_; }
  std::string path() const { return runDir_ + "/" + kLoopStateFile; }

  // Exclusive lock for a read-modify-write (creates the run dir, mode 0755, when missing).
  Result<UniqueFd> lock() const;
  // A missing file is an empty list. Records that cannot be read are left out (a device
  // without a record is foreign: never touched on a user's behalf) and listed in skipped();
  // the file as it was is copied to loops.json.bad first.
  Result<std::vector<LoopRecord>> load() const;
  const std::vector<std::string>& skipped() const { return skipped_; }
  // Write to loops.json.tmp (0644), then rename over loops.json.
  Status save(const std::vector<LoopRecord>& records) const;
  // Moves an unreadable file aside (loops.json.bad) so a fresh one can be written.
  void quarantine() const;

 private:
  std::string runDir_;
  mutable std::vector<std::string> skipped_;
};

struct ReconcileDrop {
  LoopRecord record;
  std::string reason;
};
struct ReconcileResult {
  std::vector<LoopRecord> kept;
  std::vector<ReconcileDrop> dropped;
};

// Compares records with what the kernel shows (index -> state; absent = no such device):
//   device gone or no longer bound                    -> drop ("detached")
//   attached again since (diskseq differs, both known) -> drop ("not ours")
//   bound to a different backing file (dev/inode)     -> drop ("not ours any more")
//   dev/inode unknown (device not openable): compare the sysfs backing path instead.
// Two records for one index: the newest wins. Pure.
ReconcileResult reconcileLoopRecords(std::vector<LoopRecord> records,
                                     const std::map<int, LoopKernelState>& kernel);

}  // namespace cxiosync
