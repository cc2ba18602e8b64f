// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseProcSyscall.
#include "policy/formats/proc.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  auto r = parseProcSyscall(fuzz::asText(data, size));
  fuzz::checkResult(r);
  if (r.ok() && r->kind == ProcSyscall::Kind::InSyscall) FUZZ_CHECK(r->nr >= 0);
  if (r.ok() && r->kind == ProcSyscall::Kind::NotInSyscall) FUZZ_CHECK(r->nr < 0);
  return 0;
}
