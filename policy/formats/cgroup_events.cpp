// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/cgroup_events.h"

#include "policy/formats/text_util.h"

namespace cxiosync {

namespace {
constexpr std::string_view kWhat = "cgroup.events";
}  // namespace

Result<CgroupEvents> parseCgroupEvents(std::string_view text) {
  if (auto e = detail::checkNoNul(kWhat, text)) return *e;
  CgroupEvents out;
  bool havePopulated = false;
  bool haveFrozen = false;
  detail::LineReader reader(text);
  std::string_view line;
  while (reader.next(line)) {
    const size_t n = reader.lineNo();
    std::string_view rest = line;
    std::string_view key;
    std::string_view val;
    std::string_view extra;
    if (!detail::nextField(rest, key)) continue;  // blank line
    if (!detail::nextField(rest, val)) {
      return detail::lineError(kWhat, n, "missing value for key", key);
    }
    if (detail::nextField(rest, extra)) {
      return detail::lineError(kWhat, n, "expected 'KEY VALUE', found extra fields", line);
    }
    bool* slot = nullptr;
    bool* have = nullptr;
    if (key == "populated") {
      slot = &out.populated;
      have = &havePopulated;
    } else if (key == "frozen") {
      slot = &out.frozen;
      have = &haveFrozen;
    } else {
      continue;  // unknown key: ignored
    }
    if (*have) return detail::lineError(kWhat, n, "duplicate key", key);
    *have = true;
    if (val == "0") {
      *slot = false;
    } else if (val == "1") {
      *slot = true;
    } else {
      return detail::lineError(
          kWhat, n, "invalid value for '" + std::string(key) + "' (expected 0 or 1)", val);
    }
  }
  if (!havePopulated) return makeError(std::string(kWhat) + ": no 'populated' line");
  return out;
}

}  // namespace cxiosync
