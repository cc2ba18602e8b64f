// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parsePsi. Parsed averages are finite and non-negative.
#include <cmath>

#include "policy/formats/psi.h"
#include "tests/fuzz/fuzz_common.h"

namespace {
void checkLine(const cxiosync::PsiLine& l) {
  for (double v : {l.avg10, l.avg60, l.avg300}) {
    FUZZ_CHECK(std::isfinite(v));
    FUZZ_CHECK(v >= 0);
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  auto r = parsePsi(fuzz::asText(data, size));
  fuzz::checkResult(r);
  if (r.ok()) {
    checkLine(r->some);
    if (r->full) checkLine(*r->full);
  }
  return 0;
}
