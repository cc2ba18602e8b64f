// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseMountInfo. Unescaped paths never hold NUL.
#include "policy/formats/mountinfo.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  auto r = parseMountInfo(fuzz::asText(data, size));
  fuzz::checkResult(r);
  if (r.ok()) {
    for (const auto& m : *r) {
      FUZZ_CHECK(m.root.find('\0') == std::string::npos);
      FUZZ_CHECK(m.mountPoint.find('\0') == std::string::npos);
      FUZZ_CHECK(m.source.find('\0') == std::string::npos);
      FUZZ_CHECK(!m.root.empty() && !m.mountPoint.empty() && !m.fsType.empty());
    }
  }
  return 0;
}
