#pragma once
// The boost journal: `<run-dir>/boosts.json`, the write-ahead record of every io.max line
// the daemon changed, so that no original limit is ever lost (docs/architecture.md §4.4-4.5).
//
// Schema (version 1):
//   {"version":1,"boosts":[{"cgroup":"/cg1","device":"254:0",
//     "original":{"rbps":"max","wbps":1048576,"riops":"max","wiops":"max"},
//     "boosted":{"rbps":"max","wbps":"max","riops":"max","wiops":"max"},
//     "started_mono_usec":123456789,"started_unix_usec":1700000000000000,
//     "syncer_tids":[133],"shutdown_lift":false,"cgroup_ino":23}]}
// Limit objects carry only the keys that are known; "max" is unlimited.
//
// The run dir is a tmpfs (/run): the file is written to a temp file and renamed, and never
// fsync'd, because a sync on a throttled disk is exactly what the daemon must never wait on.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/planner/decision.h"
#include "policy/result.h"

namespace cxiosync {

inline constexpr int kJournalVersion = 1;
inline constexpr const char* kJournalFile = "boosts.json";

// One journaled boost. `boost.started` is CLOCK_MONOTONIC (steady_clock), which survives a
// daemon restart within the same boot; /run does not survive a reboot.
struct JournalRecord {
  ActiveBoost boost;
  int64_t startedUnixUsec = 0;  // wall clock, for people reading the file
  // Directory inode of boost.cgroup when boosted: a cgroup removed and recreated under the
  // same name is another cgroup and must not receive the old limit. 0 = unknown.
  uint64_t cgroupInode = 0;
};

// Pure: serialize / parse the schema above. parseJournal rejects unknown versions and any
// malformed record (the whole file: a half-understood journal is not trusted).
std::string serializeJournal(const std::vector<JournalRecord>& records);
Result<std::vector<JournalRecord>> parseJournal(std::string_view text);

class Journal {
 public:
  explicit Journal(std::string runDir);

  struct Loaded {
    std::vector<JournalRecord> records;
    // Set when the file was corrupt or of an unknown version and was renamed to this path.
    std::optional<std::string> movedAsideTo;
    std::string problem;  // why it was moved aside
  };

  // Reads the journal. A missing file is an empty journal. A corrupt or unknown-version file
  // is renamed to `boosts.json.corrupt-<unix-seconds>` and reported in Loaded; only a
  // failure to read an existing file or to move it aside is an error.
  Result<Loaded> load();

  // Replaces the journal atomically (temp file + rename). Never fsync'd.
  Status save(const std::vector<JournalRecord>& records);

  const std::string& path() const { return path_; }

 private:
  std::string runDir_;
  std::string path_;
};

}  // namespace cxiosync
