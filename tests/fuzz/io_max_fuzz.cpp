// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseIoMax; every parsed entry must survive formatIoMaxLine -> parseIoMax,
// but for a later kernel's keys (otherKeys), which are kept, never written.
#include "policy/formats/io_max.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  auto r = parseIoMax(fuzz::asText(data, size));
  fuzz::checkResult(r);
  if (r.ok()) {
    for (const auto& e : *r) {
      auto again = parseIoMax(formatIoMaxLine(e));
      FUZZ_CHECK(again.ok());
      FUZZ_CHECK(again->size() == 1);
      FUZZ_CHECK((*again)[0].dev == e.dev);
      FUZZ_CHECK((*again)[0].limits == e.limits);
      FUZZ_CHECK((*again)[0].otherKeys.empty());
    }
  }
  return 0;
}
