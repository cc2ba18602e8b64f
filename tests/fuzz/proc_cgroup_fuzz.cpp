// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseProcCgroup / parseProcCgroupV2 agree with each other.
#include "policy/formats/proc.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  auto text = fuzz::asText(data, size);
  auto all = parseProcCgroup(text);
  auto v2 = parseProcCgroupV2(text);
  fuzz::checkResult(all);
  fuzz::checkResult(v2);
  FUZZ_CHECK(all.ok() == v2.ok());
  if (all.ok()) {
    FUZZ_CHECK(all->v2.has_value() == v2->has_value());
    if (all->v2) {
      FUZZ_CHECK(all->v2->path == **v2);
      FUZZ_CHECK(!all->v2->path.empty() && all->v2->path.front() == '/');
    }
  }
  return 0;
}
