#include "daemon/act/journal.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace cxiosync {
namespace {

using namespace cxiosync::testing;

JournalRecord sampleRecord() {
  JournalRecord r;
  r.boost.cgroup = cg("/tenants/cg1");
  r.boost.device = dev(254, 0);
  r.boost.original = IoMaxEntry{dev(254, 0), {kUnlimited, 1048576, kUnlimited, 200}};
  r.boost.boosted = IoMaxEntry{dev(254, 0), {kUnlimited, kUnlimited, kUnlimited, kUnlimited}};
  r.boost.started = TimePoint(std::chrono::microseconds(123456789));
  r.boost.syncerTids = {133, 140};
  r.boost.shutdownLift = false;
  r.startedUnixUsec = 1700000000000000;
  r.cgroupInode = 23;
  return r;
}

TEST(JournalTest, SerializeParseRoundTrip) {
  JournalRecord a = sampleRecord();
  JournalRecord b = sampleRecord();
  b.boost.cgroup = cg("/weird name/\"q\"");
  b.boost.device = dev(8, 16);
  b.boost.original = IoMaxEntry{dev(8, 16), {std::nullopt, 5, std::nullopt, std::nullopt}};
  b.boost.shutdownLift = true;
  b.boost.syncerTids.clear();
  std::string text = serializeJournal({a, b});
  EXPECT_NE(text.find("\"version\":1"), std::string::npos);
  auto parsed = parseJournal(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->size(), 2u);
  const auto& p = parsed.value()[0];
  EXPECT_EQ(p.boost.cgroup, a.boost.cgroup);
  EXPECT_EQ(p.boost.device, a.boost.device);
  EXPECT_EQ(p.boost.original, a.boost.original);
  EXPECT_EQ(p.boost.boosted, a.boost.boosted);
  EXPECT_EQ(p.boost.started, a.boost.started);
  EXPECT_EQ(p.boost.syncerTids, a.boost.syncerTids);
  EXPECT_EQ(p.startedUnixUsec, a.startedUnixUsec);
  EXPECT_EQ(p.cgroupInode, 23u);
  const auto& q = parsed.value()[1];
  EXPECT_EQ(q.boost.cgroup, b.boost.cgroup);
  EXPECT_EQ(q.boost.original, b.boost.original);
  EXPECT_TRUE(q.boost.shutdownLift);
}

TEST(JournalTest, EmptyJournal) {
  auto parsed = parseJournal("{\"version\":1,\"boosts\":[]}");
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->empty());
  EXPECT_TRUE(parseJournal(serializeJournal({})));
}

TEST(JournalTest, RejectsBadDocuments) {
  EXPECT_FALSE(parseJournal(""));
  EXPECT_FALSE(parseJournal("{"));
  EXPECT_FALSE(parseJournal("[]"));
  EXPECT_FALSE(parseJournal("{\"boosts\":[]}"));                        // no version
  EXPECT_FALSE(parseJournal("{\"version\":2,\"boosts\":[]}"));          // unknown version
  EXPECT_FALSE(parseJournal("{\"version\":1,\"boosts\":[],\"x\":1}"));  // unknown key
  EXPECT_FALSE(parseJournal("{\"version\":1,\"boosts\":[{}]}"));        // empty record
  std::string good = serializeJournal({sampleRecord()});
  std::string badDev = good;
  badDev.replace(badDev.find("254:0"), 5, "254:x");
  EXPECT_FALSE(parseJournal(badDev));
  std::string badLimit = good;
  badLimit.replace(badLimit.find("1048576"), 7, "\"lots\"");
  EXPECT_FALSE(parseJournal(badLimit));
  std::string escape = good;
  escape.replace(escape.find("/tenants/cg1"), 12, "/../etc");
  EXPECT_FALSE(parseJournal(escape));
  EXPECT_FALSE(parseJournal(good.substr(0, good.size() / 2)));  // truncated
}

TEST(JournalTest, SaveAndLoad) {
  TempDir dir;
  Journal j(dir.path());
  auto empty = j.load();
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->records.empty());
  EXPECT_FALSE(empty->movedAsideTo);
  ASSERT_TRUE(j.save({sampleRecord()}));
  EXPECT_FALSE(std::filesystem::exists(dir.file("boosts.json.tmp")));
  auto loaded = j.load();
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(loaded->records[0].boost.original, sampleRecord().boost.original);
}

TEST(JournalTest, CorruptJournalIsMovedAside) {
  TempDir dir;
  writeFile(dir.file("boosts.json"), "{\"version\":1,\"boosts\":[{\"cgroup\":");
  Journal j(dir.path());
  auto loaded = j.load();
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_TRUE(loaded->records.empty());
  ASSERT_TRUE(loaded->movedAsideTo);
  EXPECT_NE(loaded->movedAsideTo->find("boosts.json.corrupt-"), std::string::npos);
  EXPECT_FALSE(loaded->problem.empty());
  EXPECT_FALSE(std::filesystem::exists(dir.file("boosts.json")));
  EXPECT_EQ(readFile(*loaded->movedAsideTo), "{\"version\":1,\"boosts\":[{\"cgroup\":");
}

TEST(JournalTest, UnknownVersionIsMovedAsideAndNeverOverwritten) {
  TempDir dir;
  Journal j(dir.path());
  writeFile(dir.file("boosts.json"), "{\"version\":7,\"boosts\":[]}");
  auto first = j.load();
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->movedAsideTo);
  EXPECT_NE(first->problem.find("version 7"), std::string::npos);
  writeFile(dir.file("boosts.json"), "garbage");
  auto second = j.load();
  ASSERT_TRUE(second);
  ASSERT_TRUE(second->movedAsideTo);
  EXPECT_NE(*first->movedAsideTo, *second->movedAsideTo);
  EXPECT_EQ(readFile(*first->movedAsideTo), "{\"version\":7,\"boosts\":[]}");
  EXPECT_EQ(readFile(*second->movedAsideTo), "garbage");
}

TEST(JournalTest, SaveFailsWhenRunDirMissing) {
  Journal j("/nonexistent/cxiosync-run");
  auto st = j.save({sampleRecord()});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ENOENT);
}

}  // namespace
}  // namespace cxiosync
