// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/act/journal.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "policy/json.h"
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
  ParsedJournal parsed = parseJournal(text);
  EXPECT_TRUE(parsed.unreadable.empty());
  EXPECT_FALSE(parsed.damaged);
  EXPECT_EQ(parsed.problem, "");
  ASSERT_EQ(parsed.records.size(), 2u);
  const auto& p = parsed.records[0];
  EXPECT_EQ(p.boost.cgroup, a.boost.cgroup);
  EXPECT_EQ(p.boost.device, a.boost.device);
  EXPECT_EQ(p.boost.original, a.boost.original);
  EXPECT_EQ(p.boost.boosted, a.boost.boosted);
  EXPECT_EQ(p.boost.started, a.boost.started);
  EXPECT_EQ(p.boost.syncerTids, a.boost.syncerTids);
  EXPECT_EQ(p.startedUnixUsec, a.startedUnixUsec);
  EXPECT_EQ(p.cgroupInode, 23u);
  const auto& q = parsed.records[1];
  EXPECT_EQ(q.boost.cgroup, b.boost.cgroup);
  EXPECT_EQ(q.boost.original, b.boost.original);
  EXPECT_TRUE(q.boost.shutdownLift);
}

// A journal exactly as the daemon wrote it before nlohmann-json and the \xNN escape (one
// record per line, keys in this order): still read, and written back byte for byte.
const char* const kTodaysJournal =
    "{\"version\":1,\"boosts\":[\n"
    "{\"cgroup\":\"/tenants/cg1\",\"device\":\"254:0\",\"original\":{\"rbps\":\"max\","
    "\"wbps\":1048576,\"riops\":\"max\",\"wiops\":200},\"boosted\":{\"rbps\":\"max\","
    "\"wbps\":\"max\",\"riops\":\"max\",\"wiops\":\"max\"},\"started_mono_usec\":123456789,"
    "\"started_unix_usec\":1700000000000000,\"syncer_tids\":[133,140],\"shutdown_lift\":false,"
    "\"cgroup_ino\":23},\n"
    "{\"cgroup\":\"/system.slice/system-systemd\\\\x2dfsck.slice/caf\xc3\xa9 \\\"q\\\"\","
    "\"device\":\"8:16\",\"original\":{\"wbps\":5},\"boosted\":{\"wbps\":\"max\"},"
    "\"started_mono_usec\":7,\"started_unix_usec\":8,\"syncer_tids\":[],\"shutdown_lift\":true,"
    "\"cgroup_ino\":0}]}\n";

TEST(JournalTest, ReadsTodaysFormatIdentically) {
  ParsedJournal parsed = parseJournal(kTodaysJournal);
  ASSERT_TRUE(parsed.unreadable.empty()) << parsed.unreadable[0].reason;
  EXPECT_EQ(parsed.problem, "");
  ASSERT_EQ(parsed.records.size(), 2u);
  JournalRecord a = sampleRecord();
  EXPECT_EQ(parsed.records[0].boost.cgroup, a.boost.cgroup);
  EXPECT_EQ(parsed.records[0].boost.original, a.boost.original);
  EXPECT_EQ(parsed.records[0].boost.boosted, a.boost.boosted);
  EXPECT_EQ(parsed.records[0].boost.syncerTids, a.boost.syncerTids);
  // systemd's \x2d is text in a cgroup name, not an escape of ours: it stays as it is.
  EXPECT_EQ(parsed.records[1].boost.cgroup.display(),
            "/system.slice/system-systemd\\x2dfsck.slice/caf\xc3\xa9 \"q\"");
  EXPECT_EQ(parsed.records[1].boost.original.limits,
            (IoLimits{std::nullopt, 5, std::nullopt, std::nullopt}));
  EXPECT_TRUE(parsed.records[1].boost.shutdownLift);
  EXPECT_EQ(serializeJournal(parsed.records), kTodaysJournal);
}

TEST(JournalTest, ReadsRawNonUtf8BytesOfTodaysWriter) {
  // Before the escape, the journal wrote a byte that is not UTF-8 as it is.
  std::string text = serializeJournal({sampleRecord()});
  text.replace(text.find("/tenants/cg1"), 12, "/tenants/\xff\xfe cg");
  ParsedJournal parsed = parseJournal(text);
  ASSERT_EQ(parsed.records.size(), 1u)
      << (parsed.unreadable.empty() ? parsed.problem : parsed.unreadable[0].reason);
  EXPECT_EQ(parsed.records[0].boost.cgroup.display(), "/tenants/\xff\xfe cg");
}

// Every byte a cgroup name may hold (CgroupPath refuses NUL and control bytes, so the kernel's
// such cgroups are never boosted), in names up to the 4 KiB path limit: written, read back,
// the same bytes; the file itself is valid UTF-8.
TEST(JournalTest, RoundTripsAnyCgroupPathBytes) {
  std::vector<std::string> paths = {
      "/a\xff/b",
      "/back\\slash",
      "/lit\\x41eral\\xff\\x5c\\X5C",
      "/quote\"d/\"",
      "/caf\xc3\xa9/\xed\xa0\x80/\xc0\xaf/\xf4\x90\x80\x80",
      "/\x80\x81\xfe",
      "/" + std::string(255, '\xff'),
  };
  std::string all;
  for (int b = 0x20; b < 256; ++b)
    if (b != '/' && b != 0x7f) all.push_back(static_cast<char>(b));
  paths.push_back("/" + all.substr(0, 200) + "/" + all.substr(200));
  std::string longPath;
  while (longPath.size() + 256 <= CgroupPath::kMaxPathLength)
    longPath += "/" + std::string(250, 'x') + "\\\xe9\xff\\x";
  paths.push_back(longPath);
  std::vector<JournalRecord> records;
  for (const auto& p : paths) {
    JournalRecord r = sampleRecord();
    auto path = CgroupPath::parse(p);
    ASSERT_TRUE(path) << path.error().message;
    r.boost.cgroup = path.value();
    records.push_back(r);
  }
  EXPECT_GT(records.back().boost.cgroup.display().size(), 4000u);
  std::string text = serializeJournal(records);
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8SequenceLength(text, i);
    ASSERT_NE(n, 0u) << "invalid UTF-8 at " << i;
    i += n;
  }
  ParsedJournal parsed = parseJournal(text);
  ASSERT_TRUE(parsed.unreadable.empty()) << parsed.unreadable[0].reason;
  ASSERT_EQ(parsed.records.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i)
    EXPECT_EQ(parsed.records[i].boost.cgroup.display(), records[i].boost.cgroup.display()) << i;
}

// The JSON layer under the journal keeps bytes CgroupPath would refuse, too (newline, control
// bytes, NUL): any byte string round-trips through jsonBytes -> dump -> parse -> bytes.
TEST(JournalTest, JsonBytesRoundTripEveryByte) {
  std::string every;
  for (int b = 0; b < 256; ++b) every.push_back(static_cast<char>(b));
  for (const std::string& s : {every, std::string("a\nb\r\"\\x41\\x5c\x01\x7f\xff"),
                               std::string(4096, '\xff'), std::string("\\\\xff\\")}) {
    std::string text = jsonDump(Json{{"p", jsonBytes(s)}});
    auto back = jsonParse(text);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(jsonByteString(*back, "p"), s);
  }
}

TEST(JournalTest, EmptyJournal) {
  ParsedJournal parsed = parseJournal("{\"version\":1,\"boosts\":[]}");
  EXPECT_TRUE(parsed.records.empty());
  EXPECT_TRUE(parsed.unreadable.empty());
  EXPECT_FALSE(parsed.damaged);
  EXPECT_FALSE(parseJournal(serializeJournal({})).damaged);
}

TEST(JournalTest, UnknownKeysAreIgnored) {
  std::string text = serializeJournal({sampleRecord()});
  text.replace(text.find("\"cgroup_ino\""), 0, "\"reason\":{\"new\":[1,2]},");
  text.replace(text.find("\"boosts\""), 0, "\"written_by\":\"cxiosyncd 9\",");
  ParsedJournal parsed = parseJournal(text);
  EXPECT_TRUE(parsed.unreadable.empty());
  EXPECT_EQ(parsed.problem, "");
  ASSERT_EQ(parsed.records.size(), 1u);
  EXPECT_EQ(parsed.records[0].cgroupInode, 23u);
}

TEST(JournalTest, NewerVersionIsReadForWhatIsUnderstood) {
  std::string text = serializeJournal({sampleRecord()});
  text.replace(text.find("\"version\":1"), 11, "\"version\":3");
  ParsedJournal parsed = parseJournal(text);
  EXPECT_FALSE(parsed.damaged);
  EXPECT_EQ(parsed.version, 3u);
  EXPECT_NE(parsed.problem.find("newer"), std::string::npos) << parsed.problem;
  ASSERT_EQ(parsed.records.size(), 1u);
  EXPECT_EQ(parsed.records[0].boost.original, sampleRecord().boost.original);
}

TEST(JournalTest, OneBadRecordAmongGoodOnesIsKeptAsUnreadable) {
  JournalRecord b = sampleRecord();
  b.boost.cgroup = cg("/bad");
  JournalRecord c = sampleRecord();
  c.boost.cgroup = cg("/c");
  std::string text = serializeJournal({sampleRecord(), b, c});
  // A limit a future kernel has: restoring only the known keys would leave it lifted.
  size_t at = text.find("/bad");
  text.replace(text.find("\"wiops\":200", at), 11, "\"wiops\":200,\"wbytes_burst\":9");
  ParsedJournal parsed = parseJournal(text);
  ASSERT_EQ(parsed.records.size(), 2u);
  EXPECT_EQ(parsed.records[0].boost.cgroup, cg("/tenants/cg1"));
  EXPECT_EQ(parsed.records[1].boost.cgroup, cg("/c"));
  ASSERT_EQ(parsed.unreadable.size(), 1u);
  const UnreadableRecord& u = parsed.unreadable[0];
  EXPECT_NE(u.reason.find("wbytes_burst"), std::string::npos) << u.reason;
  EXPECT_EQ(u.cgroup, cg("/bad"));
  EXPECT_EQ(u.device, dev(254, 0));
  // Written back verbatim after the readable records, and unreadable again.
  std::string again = serializeJournal(parsed.records, parsed.unreadable);
  EXPECT_NE(again.find("\"wbytes_burst\":9"), std::string::npos);
  ParsedJournal second = parseJournal(again);
  EXPECT_EQ(second.records.size(), 2u);
  ASSERT_EQ(second.unreadable.size(), 1u);
  EXPECT_EQ(second.unreadable[0].text, u.text);
}

TEST(JournalTest, BadValuesMakeARecordUnreadable) {
  std::string good = serializeJournal({sampleRecord()});
  auto unreadable = [](const std::string& text) {
    ParsedJournal p = parseJournal(text);
    return p.records.empty() && p.unreadable.size() == 1;
  };
  std::string badDev = good;
  badDev.replace(badDev.find("254:0"), 5, "254:x");
  EXPECT_TRUE(unreadable(badDev));
  std::string badLimit = good;
  badLimit.replace(badLimit.find("1048576"), 7, "\"lots\"");
  EXPECT_TRUE(unreadable(badLimit));
  std::string escape = good;
  escape.replace(escape.find("/tenants/cg1"), 12, "/../etc");
  EXPECT_TRUE(unreadable(escape));
  EXPECT_FALSE(parseJournal(escape).unreadable[0].cgroup) << "no cgroup: every cgroup held";
  std::string badIno = good;
  badIno.replace(badIno.find("\"cgroup_ino\":23"), 15, "\"cgroup_ino\":-1");
  EXPECT_TRUE(unreadable(badIno));
  EXPECT_TRUE(unreadable("{\"version\":1,\"boosts\":[{}]}"));
  EXPECT_TRUE(unreadable("{\"version\":1,\"boosts\":[7]}"));
  // 2^64-1 used to be read as tid -1 (get<int64_t> wraps an unsigned value).
  std::string bigTid = good;
  bigTid.replace(bigTid.find("\"syncer_tids\":["), 15, "\"syncer_tids\":[18446744073709551615,");
  EXPECT_TRUE(unreadable(bigTid));
}

// Found by fuzz_journal: a start time beyond the nanosecond TimePoint overflowed (UB) and was
// rewritten as another value; such a record is unreadable, its cgroup kept.
TEST(JournalTest, StartTimeBeyondTimePointRangeIsUnreadable) {
  std::string good = serializeJournal({sampleRecord()});
  for (const char* v : {"9223372036854775807", "-9223372036854775808", "9223372036854776"}) {
    std::string bad = good;
    bad.replace(bad.find("123456789"), 9, v);
    ParsedJournal p = parseJournal(bad);
    ASSERT_EQ(p.unreadable.size(), 1u) << v;
    EXPECT_TRUE(p.records.empty()) << v;
    EXPECT_EQ(p.unreadable[0].cgroup, cg("/tenants/cg1")) << v;
  }
  std::string edge = good;
  edge.replace(edge.find("123456789"), 9, "9223372036854775");
  ParsedJournal p = parseJournal(edge);
  ASSERT_EQ(p.records.size(), 1u);
  EXPECT_EQ(parseJournal(serializeJournal(p.records)).records[0].boost.started,
            p.records[0].boost.started);
}

TEST(JournalTest, TruncatedFileIsReadLineByLine) {
  JournalRecord b = sampleRecord();
  b.boost.cgroup = cg("/second\xff");
  std::string text = serializeJournal({sampleRecord(), b});
  std::string cut = text.substr(0, text.find("/second") + 30);
  ParsedJournal parsed = parseJournal(cut);
  EXPECT_TRUE(parsed.damaged);
  EXPECT_FALSE(parsed.problem.empty());
  ASSERT_EQ(parsed.records.size(), 1u);
  EXPECT_EQ(parsed.records[0].boost.original, sampleRecord().boost.original);
  ASSERT_EQ(parsed.unreadable.size(), 1u);
  EXPECT_EQ(parsed.unreadable[0].cgroup, cg("/second\xff")) << "salvaged from the cut line";
  // Kept as {"unreadable":...} and still naming its cgroup after a rewrite.
  ParsedJournal again = parseJournal(serializeJournal(parsed.records, parsed.unreadable));
  EXPECT_FALSE(again.damaged);
  ASSERT_EQ(again.unreadable.size(), 1u);
  EXPECT_EQ(again.unreadable[0].cgroup, cg("/second\xff"));
  // Cut inside the cgroup name: nothing names the cgroup.
  ParsedJournal early = parseJournal(text.substr(0, text.find("/second") + 3));
  ASSERT_EQ(early.unreadable.size(), 1u);
  EXPECT_FALSE(early.unreadable[0].cgroup);
  // Not a journal at all / nothing in it: no records, nothing held.
  EXPECT_TRUE(parseJournal("").damaged);
  EXPECT_TRUE(parseJournal("").unreadable.empty());
  EXPECT_TRUE(parseJournal("{not json").unreadable.empty());
  EXPECT_TRUE(parseJournal("garbage").unreadable.empty());
  EXPECT_EQ(parseJournal("{\"version\":1,\"boosts\":[\ngarbage").unreadable.size(), 1u);
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
  ASSERT_EQ(loaded->unreadable.size(), 1u);
  ASSERT_TRUE(loaded->movedAsideTo);
  EXPECT_NE(loaded->movedAsideTo->find("boosts.json.corrupt-"), std::string::npos);
  EXPECT_FALSE(loaded->problem.empty());
  EXPECT_FALSE(std::filesystem::exists(dir.file("boosts.json")));
  EXPECT_EQ(readFile(*loaded->movedAsideTo), "{\"version\":1,\"boosts\":[{\"cgroup\":");
}

TEST(JournalTest, DamagedFilesAreMovedAsideAndNeverOverwritten) {
  TempDir dir;
  Journal j(dir.path());
  writeFile(dir.file("boosts.json"), "{\"version\":1,\"boosts\":[\n{\"cgroup\":\"/a\",");
  auto first = j.load();
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->movedAsideTo);
  writeFile(dir.file("boosts.json"), "garbage");
  auto second = j.load();
  ASSERT_TRUE(second);
  ASSERT_TRUE(second->movedAsideTo);
  EXPECT_NE(*first->movedAsideTo, *second->movedAsideTo);
  EXPECT_EQ(readFile(*first->movedAsideTo), "{\"version\":1,\"boosts\":[\n{\"cgroup\":\"/a\",");
  EXPECT_EQ(readFile(*second->movedAsideTo), "garbage");
}

TEST(JournalTest, SaveKeepsUnreadableRecords) {
  TempDir dir;
  JournalRecord b = sampleRecord();
  b.boost.cgroup = cg("/b");
  std::string text = serializeJournal({sampleRecord(), b});
  text.replace(text.find("\"device\":\"254:0\"", text.find("/b")), 16, "\"device\":\"huge\"");
  writeFile(dir.file("boosts.json"), text);
  Journal j(dir.path());
  auto loaded = j.load();
  ASSERT_TRUE(loaded);
  EXPECT_FALSE(loaded->movedAsideTo) << "well-formed: nothing to move aside";
  ASSERT_EQ(loaded->records.size(), 1u);
  ASSERT_EQ(loaded->unreadable.size(), 1u);
  ASSERT_TRUE(j.save({}));
  EXPECT_NE(readFile(dir.file("boosts.json")).find("\"device\":\"huge\""), std::string::npos);
  auto again = Journal(dir.path()).load();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->records.empty());
  ASSERT_EQ(again->unreadable.size(), 1u);
  EXPECT_EQ(again->unreadable[0].cgroup, cg("/b"));
}

TEST(JournalTest, SaveFailsWhenRunDirMissing) {
  Journal j("/nonexistent/cxiosync-run");
  auto st = j.save({sampleRecord()});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ENOENT);
}

}  // namespace
}  // namespace cxiosync
