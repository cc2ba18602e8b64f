// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseCgroupEvents.
#include "policy/formats/cgroup_events.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  fuzz::checkResult(parseCgroupEvents(fuzz::asText(data, size)));
  return 0;
}
