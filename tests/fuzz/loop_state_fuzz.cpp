// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: loopRecordsFromJson (loops.json, daemon/blockdev/loop/loop_state.h).
// Properties:
//   - an error is EINVAL with a message; skipped records each say why;
//   - no record has a negative index;
//   - the records read survive loopRecordsToJson -> loopRecordsFromJson unchanged (compared
//     through their serialization), with nothing skipped.
#include <string>
#include <vector>

#include "daemon/blockdev/loop/loop_state.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  std::vector<std::string> skipped;
  auto r = loopRecordsFromJson(std::string(fuzz::asText(data, size)), &skipped);
  if (!r.ok()) {
    FUZZ_CHECK(!r.error().message.empty());
    FUZZ_CHECK(r.error().code == EINVAL);
    return 0;
  }
  for (const auto& why : skipped) FUZZ_CHECK(why.starts_with("loops["));
  for (const auto& rec : *r) FUZZ_CHECK(rec.index >= 0);
  const std::string text = loopRecordsToJson(*r);
  std::vector<std::string> skipped2;
  auto again = loopRecordsFromJson(text, &skipped2);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(skipped2.empty());
  FUZZ_CHECK(again->size() == r->size());
  FUZZ_CHECK(loopRecordsToJson(*again) == text);
  return 0;
}
