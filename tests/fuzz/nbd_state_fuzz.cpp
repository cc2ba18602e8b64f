// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: nbdRecordsFromJson (nbd.json, daemon/blockdev/nbd/nbd_manager.h).
// Properties:
//   - an error is EINVAL with a message; skipped records each say why;
//   - no record has a negative index or a pid <= 0;
//   - the records read survive nbdRecordsToJson -> nbdRecordsFromJson unchanged (compared
//     through their serialization), with nothing skipped.
#include <string>
#include <vector>

#include "daemon/blockdev/nbd/nbd_manager.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  std::vector<std::string> skipped;
  auto r = nbdRecordsFromJson(std::string(fuzz::asText(data, size)), &skipped);
  if (!r.ok()) {
    FUZZ_CHECK(!r.error().message.empty());
    FUZZ_CHECK(r.error().code == EINVAL);
    return 0;
  }
  for (const auto& why : skipped) FUZZ_CHECK(why.starts_with("nbd["));
  for (const auto& rec : *r) FUZZ_CHECK(rec.index >= 0 && rec.pid > 0);
  const std::string text = nbdRecordsToJson(*r);
  std::vector<std::string> skipped2;
  auto again = nbdRecordsFromJson(text, &skipped2);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(skipped2.empty());
  FUZZ_CHECK(again->size() == r->size());
  FUZZ_CHECK(nbdRecordsToJson(*again) == text);
  return 0;
}
