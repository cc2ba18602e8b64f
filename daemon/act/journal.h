// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The boost journal: `<run-dir>/boosts.json`, the write-ahead record of every io.max line
// the daemon changed, so that no original limit is ever lost (docs/architecture.md §4.4-4.5).
//
// Schema (version 1), one record a line so that a damaged file can still be read record by
// record:
//   {"version":1,"boosts":[
//   {"cgroup":"/cg1","device":"254:0",
//     "original":{"rbps":"max","wbps":1048576,"riops":"max","wiops":"max"},
//     "boosted":{"rbps":"max","wbps":"max","riops":"max","wiops":"max"},
//     "started_mono_usec":123456789,"started_unix_usec":1700000000000000,
//     "syncer_tids":[133],"shutdown_lift":false,"cgroup_ino":23}]}
// Limit objects carry only the keys that are known; "max" is unlimited. "cgroup" is the path's
// bytes as text (policy/json.h: a byte that is not UTF-8 is written \xNN), so every path
// round-trips; files written before that rule hold valid UTF-8 and read the same.
//
// Across versions (issue 16): records are read one by one; unknown keys are ignored, and a
// file of a newer version is read for what is understood. A record that cannot be read (bad
// value, unknown limit key, damaged line) is never dropped: it is kept verbatim in the file on
// every rewrite, and its cgroup — every cgroup when even that cannot be read — is not boosted
// while it is there (BoostExecutor), because its io.max may hold a value a daemon lifted, and
// boosting would record that lifted value as an "original".
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

// A record this daemon cannot read. `text` is the record as found (a JSON value: the record
// itself, or {"unreadable":"<the damaged line>"} when it was not JSON), written back as is.
struct UnreadableRecord {
  std::string reason;
  std::optional<CgroupPath> cgroup;  // when its "cgroup" could be read; nullopt: any cgroup
  std::optional<DevNum> device;      // when its "device" could be read too
  std::string text;                  // one line of JSON
};

struct ParsedJournal {
  std::vector<JournalRecord> records;
  std::vector<UnreadableRecord> unreadable;
  std::string problem;   // file-level: damaged document, missing version, ... ("" = none)
  bool damaged = false;  // not one well-formed JSON document: read line by line
  uint64_t version = 0;  // as found (0: none)
};

// Pure: serialize / parse the schema above. `unreadable` records are appended verbatim.
std::string serializeJournal(const std::vector<JournalRecord>& records,
                             const std::vector<UnreadableRecord>& unreadable = {});
ParsedJournal parseJournal(std::string_view text);

class Journal {
 public:
  explicit Journal(std::string runDir);

  struct Loaded {
    std::vector<JournalRecord> records;
    // Records that could not be read; save() keeps writing them (setUnreadable changes that).
    std::vector<UnreadableRecord> unreadable;
    // Set when the file was not one well-formed JSON document: it was renamed to this path
    // (the exact bytes, for a person), and what could be read from it is in Loaded.
    std::optional<std::string> movedAsideTo;
    std::string problem;  // file-level problem ("" = none)
  };

  // Reads the journal. A missing file is an empty journal. A damaged file is renamed to
  // `boosts.json.corrupt-<unix-seconds>`; its readable records are returned and the rest kept
  // as unreadable. Only a failure to read an existing file or to move it aside is an error.
  Result<Loaded> load();

  // Replaces the journal atomically (temp file + rename), the unreadable records after
  // `records`. Never fsync'd.
  Status save(const std::vector<JournalRecord>& records);

  // The unreadable records save() carries on (load() sets them; the executor drops those
  // whose cgroup is gone).
  void setUnreadable(std::vector<UnreadableRecord> unreadable) {
    unreadable_ = std::move(unreadable);
  }
  const std::vector<UnreadableRecord>& unreadable() const { return unreadable_; }

  const std::string& path() const { return path_; }

 private:
  std::string runDir_;
  std::string path_;
  std::vector<UnreadableRecord> unreadable_;
};

}  // namespace cxiosync
