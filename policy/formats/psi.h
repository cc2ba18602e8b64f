#pragma once
// Pressure stall information (`io.pressure`, /proc/pressure/io):
//   "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=... total=0\n"
#include <cstdint>
#include <optional>
#include <string_view>

#include "policy/result.h"

namespace cxiosync {

struct PsiLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;
  uint64_t totalUsec = 0;
};

struct Psi {
  PsiLine some;
  std::optional<PsiLine> full;  // absent for cpu on old kernels
};

Result<Psi> parsePsi(std::string_view text);

}  // namespace cxiosync
