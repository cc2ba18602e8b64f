// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseBudgets (the tenant boost-budget history, <run-dir>/budgets.json,
// daemon/act/budget_store.h). Properties:
//   - what cannot be read is said: an unreadable document or account leaves a problem line,
//     and an unreadable document yields no account;
//   - nothing is invented: every account read (or marked unreadable) names a cgroup the
//     document holds, and every time read is an integer the document holds (in microseconds),
//     with each interval's end not before its begin;
//   - the history read survives serializeBudgets -> parseBudgets unchanged, with no problem;
//   - applyLoadedBudgets is conservative: an unreadable document makes the history lost at
//     load time, an unreadable account counts as boosted for the whole day before it, and
//     no boosted time lies after the load (monotonic time).
#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <utility>

#include "daemon/act/budget_store.h"
#include "policy/json.h"
#include "tests/fuzz/fuzz_common.h"

namespace {
using namespace cxiosync;

int64_t usecOf(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

// Every integer of the document, as the signed value it denotes, and every string that reads
// as a cgroup path.
void collect(const Json& j, std::set<int64_t>& ints, std::set<CgroupPath>& cgroups) {
  if (j.is_number_unsigned()) {
    if (auto u = j.get<uint64_t>(); u <= static_cast<uint64_t>(INT64_MAX))
      ints.insert(static_cast<int64_t>(u));
  } else if (j.is_number_integer()) {
    ints.insert(j.get<int64_t>());
  } else if (j.is_string()) {
    if (auto cg = CgroupPath::parse(bytesFromText(j.get<std::string>()))) cgroups.insert(*cg);
  } else if (j.is_structured()) {
    for (const Json& e : j) collect(e, ints, cgroups);
  }
}

// Interval order among equal begins is not fixed (std::sort): compare as sorted sequences.
BudgetUsage canonical(BudgetUsage u) {
  for (auto& [cg, h] : u) {
    std::sort(h.closed.begin(), h.closed.end(), [](const auto& a, const auto& b) {
      return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
    });
  }
  return u;
}

void checkAgainstDocument(std::string_view text, const ParsedBudgets& p) {
  auto doc = jsonParse(text);
  if (!doc) {
    FUZZ_CHECK(p.unreadable && p.usage.empty() && p.unreadableAccounts.empty());
    return;
  }
  std::set<int64_t> ints;
  std::set<CgroupPath> cgroups;
  collect(*doc, ints, cgroups);
  auto known = [&](TimePoint t) { return ints.contains(usecOf(t)); };
  for (const auto& [key, u] : p.usage) {
    FUZZ_CHECK(cgroups.contains(key.account));
    if (key.party.kind == SyncParty::Kind::Tenant) FUZZ_CHECK(cgroups.contains(key.party.tenant));
    for (const auto& i : u.closed) FUZZ_CHECK(known(i.begin) && known(i.end) && i.begin <= i.end);
    FUZZ_CHECK(!u.openSince || known(*u.openSince));
    FUZZ_CHECK(u.lastSeenActive == TimePoint{} || known(u.lastSeenActive));
  }
  for (const CgroupPath& cg : p.unreadableAccounts) FUZZ_CHECK(cgroups.contains(cg));
  FUZZ_CHECK(!p.historyLostAt || known(*p.historyLostAt));
}

void checkApplied(const ParsedBudgets& p) {
  const TimePoint now = TimePoint(std::chrono::hours(24 * 365));
  PlannerState state;
  applyLoadedBudgets(p, now, state);
  if (p.unreadable) FUZZ_CHECK(state.historyLostAt == now);
  for (const CgroupPath& cg : p.unreadableAccounts) {
    const auto& u = state.usage.at(BudgetKey{cg, SyncParty::any()});
    FUZZ_CHECK(!u.openSince && u.closed.size() == 1);
    FUZZ_CHECK(u.closed[0].end == now && now - u.closed[0].begin == std::chrono::hours(24));
  }
  for (const auto& [key, u] : state.usage) {
    FUZZ_CHECK(!u.openSince || (*u.openSince <= now && u.lastSeenActive >= *u.openSince));
    for (const auto& i : u.closed) FUZZ_CHECK(i.begin <= i.end && i.end <= now);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::asText(data, size);
  const ParsedBudgets p = parseBudgets(in);
  for (const auto& why : p.problems) FUZZ_CHECK(!why.empty());
  if (p.unreadable || !p.unreadableAccounts.empty()) FUZZ_CHECK(!p.problems.empty());
  checkAgainstDocument(in, p);
  checkApplied(p);

  const ParsedBudgets again = parseBudgets(serializeBudgets(p.usage, p.historyLostAt));
  FUZZ_CHECK(!again.unreadable && again.problems.empty() && again.unreadableAccounts.empty());
  FUZZ_CHECK(canonical(again.usage) == canonical(p.usage));
  FUZZ_CHECK(again.historyLostAt == p.historyLostAt);
  return 0;
}
