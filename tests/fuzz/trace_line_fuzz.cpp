// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseTraceLine, fed line by line like the tracefs adapter does.
#include "policy/formats/trace_event.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxiosync;
  std::string_view text = fuzz::asText(data, size);
  auto check = [](std::string_view line) {
    auto r = parseTraceLine(line);
    fuzz::checkResult(r);
    if (!r.ok()) return;
    FUZZ_CHECK(r->tid >= 0);
    using Kind = TraceEvent::Kind;
    if (r->kind == Kind::SyscallEnter || r->kind == Kind::SyscallExit) {
      FUZZ_CHECK(!r->syscall.empty());
    }
    if (r->kind == Kind::SyscallExit) FUZZ_CHECK(r->ret.has_value());
    if (r->kind == Kind::WritebackQueue) FUZZ_CHECK(!r->reason.empty());
  };
  check(text);  // the whole input as one line
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    check(text.substr(start, nl - start));
    start = nl + 1;
  }
  return 0;
}
