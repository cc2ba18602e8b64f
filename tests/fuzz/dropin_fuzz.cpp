// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: parseDropInText (the [X-CxIOSync] section of systemd drop-ins). Properties:
//   - errors name the file and a line that exists ("fuzz.conf:LINE: ...");
//   - every assignment starts on a line of the file, and its value, written back as
//     `Key="value"`, parses to the same key and value;
//   - parseDropIns of the one file succeeds exactly when parseDropInText does.
#include <algorithm>
#include <string>

#include "policy/config/dropin.h"
#include "tests/fuzz/fuzz_common.h"

namespace {
using namespace cxiosync;

std::string quoted(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ConfigText file{"fuzz.conf", std::string(fuzz::asText(data, size))};
  const int lines = static_cast<int>(std::count(file.text.begin(), file.text.end(), '\n')) + 1;
  auto r = parseDropInText(file);
  fuzz::checkResult(r);
  auto merged = parseDropIns({file});
  FUZZ_CHECK(merged.ok() == r.ok());
  if (!r.ok()) {
    const std::string& m = r.error().message;
    FUZZ_CHECK(m.starts_with("fuzz.conf:"));
    int line = std::atoi(m.c_str() + 10);
    FUZZ_CHECK(line >= 1 && line <= lines);
    return 0;
  }
  for (const auto& a : *r) {
    FUZZ_CHECK(a.line >= 1 && a.line <= lines);
    FUZZ_CHECK(!dropInKeyName(a.key).empty());
    const std::string again =
        "[X-CxIOSync]\n" + std::string(dropInKeyName(a.key)) + "=" + quoted(a.value) + "\n";
    auto r2 = parseDropInText({"again.conf", again});
    FUZZ_CHECK(r2.ok());
    FUZZ_CHECK(r2->size() == 1);
    FUZZ_CHECK((*r2)[0].key == a.key && (*r2)[0].value == a.value && (*r2)[0].line == 2);
  }
  return 0;
}
