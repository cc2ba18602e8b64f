// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseJournal (the boost journal, daemon/act/journal.h). Properties:
//   - no record is ever dropped: a well-formed document yields one record or one unreadable
//     record per element of "boosts";
//   - a record's original/boosted limits hold exactly the keys its JSON object held (a key it
//     did not read would be a limit the daemon invents; one it skipped, a limit never restored);
//   - records and unreadable records survive serializeJournal -> parseJournal unchanged
//     (unreadable ones verbatim, as one line of JSON);
//   - the bytes round-trip through textFromBytes -> bytesFromText.
#include <set>
#include <string>

#include "daemon/act/journal.h"
#include "policy/bytes_text.h"
#include "policy/json.h"
#include "tests/fuzz/fuzz_common.h"

namespace {
using namespace cxiosync;

bool sameRecord(const JournalRecord& a, const JournalRecord& b) {
  return a.boost.cgroup == b.boost.cgroup && a.boost.device == b.boost.device &&
         a.boost.original == b.boost.original && a.boost.boosted == b.boost.boosted &&
         a.boost.started == b.boost.started && a.boost.syncerTids == b.boost.syncerTids &&
         a.boost.shutdownLift == b.boost.shutdownLift && a.startedUnixUsec == b.startedUnixUsec &&
         a.cgroupInode == b.cgroupInode;
}

bool isUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::set<std::string> keysSet(const IoLimits& l) {
  std::set<std::string> out;
  if (l.rbps) out.insert("rbps");
  if (l.wbps) out.insert("wbps");
  if (l.riops) out.insert("riops");
  if (l.wiops) out.insert("wiops");
  return out;
}

std::set<std::string> keysOf(const Json& rec, const char* what) {
  std::set<std::string> out;
  const Json* j = jsonMember(rec, what);
  if (j && j->is_object())
    for (const auto& [k, v] : j->items()) out.insert(k);
  return out;
}

// Pairs the elements of a well-formed "boosts" array with what the parser made of them.
void checkAgainstDocument(std::string_view text, const ParsedJournal& p) {
  auto doc = jsonParse(text);
  if (!doc) return;  // not UTF-8 JSON as it stands (legacy bytes): covered by the round trip
  const Json* boosts = jsonMember(*doc, "boosts");
  if (!boosts || !boosts->is_array()) return;
  FUZZ_CHECK(!p.damaged);
  FUZZ_CHECK(p.records.size() + p.unreadable.size() == boosts->size());
  size_t r = 0, u = 0;
  for (const Json& e : *boosts) {
    if (u < p.unreadable.size() && p.unreadable[u].text == jsonDump(e)) {
      ++u;
      continue;
    }
    FUZZ_CHECK(r < p.records.size());
    const JournalRecord& rec = p.records[r++];
    FUZZ_CHECK(keysSet(rec.boost.original.limits) == keysOf(e, "original"));
    FUZZ_CHECK(keysSet(rec.boost.boosted.limits) == keysOf(e, "boosted"));
  }
  FUZZ_CHECK(r == p.records.size() && u == p.unreadable.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::asText(data, size);
  const std::string text = textFromBytes(in);
  FUZZ_CHECK(isUtf8(text));
  FUZZ_CHECK(bytesFromText(text) == in);

  ParsedJournal p = parseJournal(in);
  FUZZ_CHECK(!p.damaged || !p.problem.empty());
  for (const auto& u : p.unreadable) {
    FUZZ_CHECK(!u.reason.empty());
    FUZZ_CHECK(u.text.find('\n') == std::string::npos);
    FUZZ_CHECK(isUtf8(u.text));
    FUZZ_CHECK(jsonParse(u.text).ok());
    FUZZ_CHECK(!u.device || u.cgroup);
  }
  checkAgainstDocument(in, p);

  // Each record alone, then everything together, as the daemon rewrites the file.
  for (const auto& rec : p.records) {
    ParsedJournal again = parseJournal(serializeJournal({rec}));
    FUZZ_CHECK(!again.damaged && again.problem.empty() && again.version == 1);
    FUZZ_CHECK(again.unreadable.empty() && again.records.size() == 1);
    FUZZ_CHECK(sameRecord(again.records[0], rec));
  }
  ParsedJournal all = parseJournal(serializeJournal(p.records, p.unreadable));
  FUZZ_CHECK(!all.damaged && all.problem.empty());
  FUZZ_CHECK(all.records.size() == p.records.size());
  for (size_t i = 0; i < all.records.size(); ++i)
    FUZZ_CHECK(sameRecord(all.records[i], p.records[i]));
  FUZZ_CHECK(all.unreadable.size() == p.unreadable.size());
  for (size_t i = 0; i < all.unreadable.size(); ++i) {
    FUZZ_CHECK(all.unreadable[i].text == p.unreadable[i].text);
    FUZZ_CHECK(all.unreadable[i].cgroup == p.unreadable[i].cgroup);
  }
  return 0;
}
