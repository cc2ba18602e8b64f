// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseProcStat.
#include "policy/formats/proc.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  auto r = parseProcStat(fuzz::asText(data, size));
  fuzz::checkResult(r);
  if (r.ok()) {
    FUZZ_CHECK(r->pid > 0);
    FUZZ_CHECK(r->ppid >= 0);
    FUZZ_CHECK(r->comm.size() < size);
  }
  return 0;
}
