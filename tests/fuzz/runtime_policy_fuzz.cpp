// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseRuntimePolicy (runtime-policy.json, daemon/sources/
// runtime_policy_store.h). Properties:
//   - an error is EINVAL with a message; `skipped` says why for each cgroup/knob left out;
//   - every entry kept is a valid knob with a value setPolicyKnob accepts, no cgroup is empty;
//   - serializeRuntimePolicy -> parseRuntimePolicy gives the same entries, nothing skipped;
//   - runtimeLayerOf has one settings object per cgroup.
#include <string>
#include <vector>

#include "daemon/sources/runtime_policy_store.h"
#include "policy/config/values.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  std::vector<std::string> skipped;
  auto r = parseRuntimePolicy(fuzz::asText(data, size), &skipped);
  if (!r.ok()) {
    FUZZ_CHECK(!r.error().message.empty());
    FUZZ_CHECK(r.error().code == EINVAL);
    return 0;
  }
  for (const auto& why : skipped) FUZZ_CHECK(!why.empty());
  for (const auto& [cg, knobs] : *r) {
    FUZZ_CHECK(!knobs.empty());
    for (const auto& [knob, value] : knobs) {
      PolicySettings probe;
      FUZZ_CHECK(setPolicyKnob(probe, knob, value, ValueSource::runtime()).ok());
    }
  }
  std::vector<std::string> skipped2;
  auto again = parseRuntimePolicy(serializeRuntimePolicy(*r), &skipped2);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(skipped2.empty());
  FUZZ_CHECK(*again == *r);
  FUZZ_CHECK(runtimeLayerOf(*r).size() == r->size());
  return 0;
}
