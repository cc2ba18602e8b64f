// SPDX-License-Identifier: GPL-2.0-or-later
// The budget history in <run-dir>/budgets.json (issue 15): it round-trips, survives a daemon
// restart, and what cannot be read counts as budget spent, never as a fresh budget.
#include "daemon/act/budget_store.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "daemon/core/daemon.h"
#include "policy/config/defaults.h"
#include "policy/json.h"
#include "test_util.h"

namespace cxiosync {
namespace {

using namespace cxiosync::testing;
using namespace std::chrono_literals;

TimePoint at(int64_t sec) {
  return TimePoint(std::chrono::seconds(sec));
}

// A version 1 record (no party): counts against every party of its account.
BudgetKey v1(const char* account) {
  return BudgetKey{cg(account), SyncParty::any()};
}
BudgetKey share(const char* account, SyncParty party) {
  return BudgetKey{cg(account), std::move(party)};
}
const char* const kUser = "/user.slice/user-1000.slice/user@1000.service";

BudgetUsage sample() {
  BudgetUsage u;
  auto& t = u[share(kUser, SyncParty::system())];
  t.closed = {{at(100), at(106)}, {at(110), at(111)}};
  t.openSince = at(120);
  t.lastSeenActive = at(125);
  u[share(kUser, SyncParty::ofTenant(cg("/user.slice/user-1001.slice")))].closed = {
      {at(105), at(108)}};
  u[share("/cg1", SyncParty::user(1000))].closed = {{at(50), at(60)}};
  return u;
}

TEST(BudgetStore, RoundTrips) {
  const BudgetUsage u = sample();
  ParsedBudgets p = parseBudgets(serializeBudgets(u, at(7)));
  EXPECT_FALSE(p.unreadable);
  EXPECT_TRUE(p.problems.empty());
  EXPECT_EQ(p.usage, u);
  EXPECT_EQ(p.historyLostAt, at(7));
}

TEST(BudgetStore, UnknownKeysAndNewerVersionsAreRead) {
  ParsedBudgets p = parseBudgets(
      R"({"version":9,"future":1,"accounts":[{"cgroup":"/a","boosted_mono_usec":[[1000000,2000000]],"colour":"red"}]})");
  EXPECT_FALSE(p.unreadable);
  ASSERT_EQ(p.usage.size(), 1u);
  EXPECT_EQ(p.usage.at(v1("/a")).closed.size(), 1u);
  ASSERT_EQ(p.problems.size(), 1u);  // the newer version is said, not refused
}

TEST(BudgetStore, UnreadableAccountCountsAsSpent) {
  ParsedBudgets p = parseBudgets(
      R"({"version":1,"accounts":[{"cgroup":"/a","boosted_mono_usec":"soon"},{"cgroup":"/b"}]})");
  EXPECT_FALSE(p.unreadable);
  ASSERT_EQ(p.unreadableAccounts.size(), 1u);
  EXPECT_EQ(p.unreadableAccounts[0], cg("/a"));
  PlannerState s;
  applyLoadedBudgets(p, at(1000), s);
  // /a is boosted for all of any window (up to the longest, a day) before the load.
  EXPECT_EQ(s.usedWithin(share("/a", SyncParty::system()), at(1000), 120s), 120s);
  EXPECT_EQ(s.usedWithin(share("/a", SyncParty::user(5)), at(1000), 120s), 120s);
  EXPECT_EQ(s.usedWithin(share("/b", SyncParty::system()), at(1000), 120s), 0s);
  EXPECT_FALSE(s.historyLostAt);
}

// Issue 25: a version 1 file (budgets per account, before per-party shares) still loads; its
// time counts against every party of the account, for one window.
TEST(BudgetStore, Version1FileCountsAgainstEveryParty) {
  ParsedBudgets p = parseBudgets(
      R"({"version":1,"accounts":[{"cgroup":"/backup.slice","boosted_mono_usec":[[900000000,930000000]]}]})");
  EXPECT_TRUE(p.problems.empty());
  ASSERT_EQ(p.usage.size(), 1u);
  PlannerState s;
  applyLoadedBudgets(p, at(1000), s);
  for (const SyncParty& party : {SyncParty::system(), SyncParty::user(1000),
                                 SyncParty::ofTenant(cg("/user.slice/user-1000.slice"))}) {
    EXPECT_EQ(s.usedWithin(BudgetKey{cg("/backup.slice"), party}, at(1000), 120s), 30s)
        << party.describe();
    EXPECT_EQ(s.budgetFreesAt(BudgetKey{cg("/backup.slice"), party}, at(1000), 120s, 30s),
              at(1020) + 1ns);
  }
  EXPECT_EQ(s.usedWithin(BudgetKey{cg("/other"), SyncParty::system()}, at(1000), 120s), 0s);
}

// The file keeps "accounts", the union of each account's shares, for a version 1 daemon after
// a downgrade (it ignores "shares"): what that daemon reads is what version 1 would have kept.
TEST(BudgetStore, AccountsStayReadableForAVersion1Reader) {
  auto doc = jsonParse(serializeBudgets(sample()));
  ASSERT_TRUE(doc);
  ASSERT_TRUE(jsonMember(*doc, "shares"));
  doc->erase("shares");  // what a version 1 reader sees
  ParsedBudgets p = parseBudgets(jsonDump(*doc));
  EXPECT_FALSE(p.unreadable);
  ASSERT_EQ(p.usage.size(), 2u);
  const auto& u = p.usage.at(v1(kUser));
  // system {100-106, 110-111} and tenant 1001 {105-108}: 100-108, 110-111.
  ASSERT_EQ(u.closed.size(), 2u);
  EXPECT_EQ(u.closed[0].begin, at(100));
  EXPECT_EQ(u.closed[0].end, at(108));
  EXPECT_EQ(u.closed[1].end, at(111));
  EXPECT_EQ(u.openSince, at(120));
  EXPECT_EQ(p.usage.at(v1("/cg1")).closed.size(), 1u);
}

TEST(BudgetStore, SyncPartiesRoundTripAndBadOnesAreUnreadable) {
  for (const SyncParty& party :
       {SyncParty::system(), SyncParty::user(0), SyncParty::user(4294967295u),
        SyncParty::ofTenant(cg("/user.slice/user-1000.slice")), SyncParty::any()}) {
    EXPECT_EQ(parseSyncParty(syncPartyText(party)), party) << syncPartyText(party);
  }
  for (const char* bad : {"", "uid ", "uid x", "uid -1", "uid +1", "uid 4294967296", "root",
                          "user.slice", "/a/../b"}) {
    EXPECT_FALSE(parseSyncParty(bad)) << bad;
  }
  ParsedBudgets p = parseBudgets(
      R"({"version":2,"shares":[{"cgroup":"/a","syncer":"uid x","boosted_mono_usec":[]}],"accounts":[]})");
  ASSERT_EQ(p.unreadableAccounts.size(), 1u);
  PlannerState s;
  applyLoadedBudgets(p, at(1000), s);
  EXPECT_EQ(s.usedWithin(BudgetKey{cg("/a"), SyncParty::user(7)}, at(1000), 120s), 120s);
}

// A time above INT64_MAX used to wrap to a negative one (2^64-1 read as -1 us: an open
// interval since before the boot, an account that never was boosted); found by fuzz_budgets.
TEST(BudgetStore, TimesAboveInt64AreUnreadableNotWrapped) {
  ParsedBudgets p = parseBudgets(
      R"({"version":1,"accounts":[{"cgroup":"/a","open_since_mono_usec":18446744073709551615},)"
      R"({"cgroup":"/b","boosted_mono_usec":[[1,9223372036854775808]]}]})");
  EXPECT_FALSE(p.unreadable);
  EXPECT_TRUE(p.usage.empty());
  ASSERT_EQ(p.unreadableAccounts.size(), 2u);
  EXPECT_EQ(p.unreadableAccounts[0], cg("/a"));
  EXPECT_EQ(p.unreadableAccounts[1], cg("/b"));
  p = parseBudgets(R"({"version":1,"history_lost_mono_usec":18446744073709551615,"accounts":[]})");
  EXPECT_TRUE(p.unreadable);
  EXPECT_FALSE(p.historyLostAt);
}

TEST(BudgetStore, UnreadableFileCountsEveryBudgetAsSpentForOneWindow) {
  for (const char* text : {"{\"version\":1,\"accounts\":[", "garbage", "{\"version\":1}",
                           R"({"version":1,"accounts":[{"boosted_mono_usec":[]}]})"}) {
    ParsedBudgets p = parseBudgets(text);
    EXPECT_TRUE(p.unreadable) << text;
    EXPECT_FALSE(p.problems.empty()) << text;
    PlannerState s;
    applyLoadedBudgets(p, at(1000), s);
    ASSERT_TRUE(s.historyLostAt) << text;
    // Any account: spent now, a 25% budget of 120 s is free again after 90 s.
    const BudgetKey any = share("/any", SyncParty::system());
    EXPECT_EQ(s.usedWithin(any, at(1000), 120s), 120s);
    EXPECT_EQ(s.budgetFreesAt(any, at(1000), 120s, 30s), at(1090) + 1ns);
    EXPECT_EQ(s.usedWithin(any, at(1200), 120s), 0s);
  }
}

// Found by fuzz_budgets: an open interval since after the load time (a damaged record: the
// times are CLOCK_MONOTONIC of this boot) was kept, with "last seen" set back to the load,
// before its start. Such an account, and one with a closed interval ending after the load,
// counts as unreadable: boosted for the whole day.
TEST(BudgetStore, BoostedTimeAfterTheLoadIsUnreadable) {
  ParsedBudgets p = parseBudgets(
      R"({"version":1,"accounts":[{"cgroup":"/a","open_since_mono_usec":1844744073709554},)"
      R"({"cgroup":"/b","boosted_mono_usec":[[999000000,1001000000]]},)"
      R"({"cgroup":"/c","boosted_mono_usec":[[990000000,995000000]]}]})");
  ASSERT_EQ(p.usage.size(), 3u);
  PlannerState s;
  applyLoadedBudgets(p, at(1000), s);
  for (const char* name : {"/a", "/b"}) {
    const auto& u = s.usage.at(v1(name));
    EXPECT_FALSE(u.openSince) << name;
    ASSERT_EQ(u.closed.size(), 1u) << name;
    EXPECT_EQ(u.closed[0].begin, at(1000) - 86400s) << name;
    EXPECT_EQ(u.closed[0].end, at(1000)) << name;
  }
  EXPECT_EQ(s.usage.at(v1("/c")).closed.size(), 1u);
  EXPECT_EQ(s.usage.at(v1("/c")).closed[0].end, at(995));
}

TEST(BudgetStore, OpenIntervalWithoutAnEndLastsUntilTheLoad) {
  ParsedBudgets p = parseBudgets(
      R"({"version":1,"accounts":[{"cgroup":"/a","boosted_mono_usec":[],"open_since_mono_usec":990000000}]})");
  PlannerState s;
  applyLoadedBudgets(p, at(1000), s);
  EXPECT_EQ(s.usage.at(v1("/a")).lastSeenActive, at(1000));
}

TEST(BudgetStore, SavesOnChangeAndRefreshesOpenIntervals) {
  TempDir run;
  BudgetStore store(run.path());
  ASSERT_TRUE(store.load());
  PlannerState s;
  EXPECT_FALSE(store.saveIfChanged(s, at(1)).value());  // nothing to keep: no file
  EXPECT_FALSE(std::filesystem::exists(store.path()));
  s.usage = sample();
  EXPECT_TRUE(store.saveIfChanged(s, at(2)).value());
  EXPECT_FALSE(store.saveIfChanged(s, at(2) + 500ms).value());
  s.usage.begin()->second.lastSeenActive = at(3);
  EXPECT_FALSE(store.saveIfChanged(s, at(2) + 900ms).value());  // only last_seen moved
  EXPECT_TRUE(store.saveIfChanged(s, at(3)).value());           // open: refreshed each second
  BudgetStore again(run.path());
  auto loaded = again.load();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->usage, s.usage);
  EXPECT_EQ((std::filesystem::status(store.path()).permissions() & std::filesystem::perms::all),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST(BudgetStore, FinalSaveClosesOpenIntervals) {
  TempDir run;
  BudgetStore store(run.path());
  PlannerState s;
  s.usage = sample();
  ASSERT_TRUE(store.saveFinal(s, at(130)));
  auto loaded = BudgetStore(run.path()).load();
  ASSERT_TRUE(loaded);
  const auto& t = loaded->usage.at(share(kUser, SyncParty::system()));
  EXPECT_FALSE(t.openSince);
  ASSERT_EQ(t.closed.size(), 3u);
  EXPECT_EQ(t.closed.back().begin, at(120));
  EXPECT_EQ(t.closed.back().end, at(130));
}

DaemonSettings settingsFor(const TempDir& cgroups, const TempDir& run) {
  DaemonSettings o;
  o.cgroupRoot = cgroups.path();
  o.runDir = run.path();
  o.tracefsRoot = "/nonexistent";
  o.detector = DetectorKind::Procfs;
  o.configPath = "/nonexistent";
  o.assumeShutdown = ShutdownOverride::No;
  return o;
}

// One daemon life: start, a few ticks, SIGTERM (the daemon blocks it and reads it from its
// signalfd, as under systemd).
void runDaemonOnce(const TempDir& cgroups, const TempDir& run) {
  Config config{builtinGlobalSettings(), {}, {}, {}};
  auto d = Daemon::create(settingsFor(cgroups, run), config);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_TRUE(d.value()->loop().addTimer(30ms, 0ns, [] { ::kill(::getpid(), SIGTERM); }));
  EXPECT_EQ(d.value()->run(), 0);
}

TEST(BudgetStore, HistorySurvivesADaemonRestart) {
  TempDir cgroups, run;
  std::filesystem::create_directories(cgroups.file("t/a"));
  // The daemon looks at limited subtrees (and their ancestors): /t is the account of /t/a's
  // limit. An account whose cgroup it no longer sees takes its history with it.
  writeFile(cgroups.file("t/a/io.max"), "254:0 wbps=1048576\n");
  const TimePoint now = std::chrono::steady_clock::now();
  PlannerState before;
  auto& t = before.usage[share("/t", SyncParty::user(1000))];
  t.closed = {{now - 20s, now - 10s}};  // inside the default 120 s window
  before.usage[share("/gone", SyncParty::system())].closed = {
      {now - 20s, now - 10s}};  // its cgroup no longer exists
  ASSERT_TRUE(BudgetStore(run.path()).saveFinal(before, now));
  runDaemonOnce(cgroups, run);
  auto after = BudgetStore(run.path()).load();
  ASSERT_TRUE(after);
  const BudgetKey kept = share("/t", SyncParty::user(1000));
  ASSERT_EQ(after->usage.count(kept), 1u) << readFile(run.file("budgets.json"));
  EXPECT_EQ(after->usage.at(kept).closed.size(), 1u);
  EXPECT_EQ(after->usage.count(share("/gone", SyncParty::system())), 0u);
}

TEST(BudgetStore, DamagedHistoryIsKeptAsLostAcrossRestarts) {
  TempDir cgroups, run;
  writeFile(run.file("budgets.json"), "{\"version\":1,\"accounts\":[{\"cgr");
  runDaemonOnce(cgroups, run);
  auto after = BudgetStore(run.path()).load();
  ASSERT_TRUE(after);
  EXPECT_FALSE(after->unreadable);
  ASSERT_TRUE(after->historyLostAt) << readFile(run.file("budgets.json"));
  EXPECT_LE(*after->historyLostAt, std::chrono::steady_clock::now());
}

}  // namespace
}  // namespace cxiosync
