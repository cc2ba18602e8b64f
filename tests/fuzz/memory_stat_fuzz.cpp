// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseMemoryStat.
#include "policy/formats/memory_stat.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  auto r = parseMemoryStat(fuzz::asText(data, size));
  fuzz::checkResult(r);
  if (r.ok()) {
    (void)r->fileDirty();
    (void)r->fileWriteback();
    for (const auto& kv : r->values) FUZZ_CHECK(!kv.first.empty());
  }
  return 0;
}
