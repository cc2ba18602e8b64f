// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Pressure stall information (`io.pressure`, /proc/pressure/io):
//   "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=... total=0\n"
// (kernel/sched/psi.c: psi_show). A "some" line is required, "full" is optional; each needs
// all four keys, once. avg values are non-negative decimals ("12.34"; no sign, exponent,
// inf or nan); total is an unsigned 64-bit count of microseconds. Unknown keys on a line are
// ignored; an unknown line kind, a repeated line kind or an empty file are errors.
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
