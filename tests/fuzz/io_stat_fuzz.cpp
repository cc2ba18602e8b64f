// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseIoStat.
#include "policy/formats/io_stat.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  auto r = parseIoStat(fuzz::asText(data, size));
  fuzz::checkResult(r);
  if (r.ok()) {
    for (const auto& e : *r) {
      for (const auto& [k, v] : e.counters) {
        FUZZ_CHECK(!k.empty());
        FUZZ_CHECK(e.get(k) == v);
        FUZZ_CHECK(e.other.count(k) == 0);
      }
      for (const auto& kv : e.other) FUZZ_CHECK(!kv.first.empty());
    }
  }
  return 0;
}
