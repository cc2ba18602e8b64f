// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The boost-budget history: `<run-dir>/budgets.json`, next to the boost journal, so that a
// daemon restart does not hand every tenant a fresh boost_budget (issue 15). Before it, the
// history lived only in the planner's memory, and `systemctl restart cxiosyncd` (or a crash)
// reset it.
//
// Schema (version 2), one record a line:
//   {"version":2,"shares":[
//   {"cgroup":"/backup.slice","syncer":"uid 1000",
//     "boosted_mono_usec":[[100000000,106000000]],"open_since_mono_usec":107000000,
//     "last_seen_mono_usec":109000000}],
//    "accounts":[{"cgroup":"/backup.slice","boosted_mono_usec":[...],...}]}
// A share is what the planner charges boosted time to (PlannerState::usage, a BudgetKey): an
// account (a tenant root, or a limited cgroup outside every tenant) and the syncing party
// ("syncer": "system", "uid N", or the tenant root's path). "accounts" holds, per account, the
// union of its shares' time: what version 1 kept, for a daemon of version 1 that reads this
// file after a downgrade (it ignores "shares"). A file without "shares" (version 1) is read
// from "accounts": whose syncs that time was is unknown, so it counts against every party
// (SyncParty::Any) for one window. Times are CLOCK_MONOTONIC (as the journal's), valid across
// daemon restarts within one boot; /run does not survive a reboot.
//
// Reading is tolerant (policy/json.h): unknown keys are ignored, a newer version is read for
// what is understood. What cannot be read is treated conservatively, as budget spent: an
// record that cannot be read (but whose cgroup can) counts that account as boosted, for every
// party, for a whole window before the load; a file that cannot be read at all does so for every
// account (PlannerState::historyLostAt). A lost history must not become a fresh budget.
//
// Like the journal, the file is written to a temp file and renamed, never fsync'd.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/planner/planner.h"
#include "policy/result.h"

namespace cxiosync {

inline constexpr int kBudgetsVersion = 2;
inline constexpr const char* kBudgetsFile = "budgets.json";

using BudgetUsage = std::map<BudgetKey, PlannerState::HolderUsage>;

struct ParsedBudgets {
  BudgetUsage usage;
  std::optional<TimePoint> historyLostAt;      // as written by an earlier daemon
  std::vector<CgroupPath> unreadableAccounts;  // records whose cgroup was readable, nothing else
  std::vector<std::string> problems;           // one line each, for the log
  bool unreadable = false;  // the document itself could not be read: every account is suspect
};

// "system", "uid 1000", "/user.slice/user-1000.slice" (a tenant root); "any" for SyncParty::Any.
std::string syncPartyText(const SyncParty& party);
std::optional<SyncParty> parseSyncParty(std::string_view text);

// Pure: serialize / parse the schema above.
std::string serializeBudgets(const BudgetUsage& usage,
                             std::optional<TimePoint> historyLostAt = std::nullopt);
ParsedBudgets parseBudgets(std::string_view text);

// Puts what was read into a planner state at load time `now`, the conservative way (see above).
void applyLoadedBudgets(const ParsedBudgets& parsed, TimePoint now, PlannerState& state);

class BudgetStore {
 public:
  explicit BudgetStore(std::string runDir);

  // Reads the file (a missing file is an empty history). Only a failure to read an existing
  // file is an error; the caller then treats the history as lost (historyLostAt).
  Result<ParsedBudgets> load();

  // Writes `usage` when it changed since the last write, or, while an interval is open, at
  // most once per `openRefresh` (so that a kill -9 loses at most that much of an open
  // boost). Returns whether it wrote.
  Result<bool> saveIfChanged(const PlannerState& state, TimePoint now,
                             std::chrono::nanoseconds openRefresh = std::chrono::seconds(1));
  // A clean stop: open intervals closed at `now`, written unconditionally.
  Status saveFinal(const PlannerState& state, TimePoint now);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string lastKey_;  // the last written state without last_seen times
  bool written_ = false;
  bool fileExists_ = false;  // load() found a file: an empty history must overwrite it
  TimePoint lastWrite_{};
};

}  // namespace cxiosync
