// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/mountinfo.h"

#include "policy/formats/text_util.h"

namespace cxiosync {

namespace {
constexpr std::string_view kWhat = "mountinfo";

bool isOctal(char c) {
  return c >= '0' && c <= '7';
}

Result<std::string> unescape(std::string_view s, size_t n, std::string_view field) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' &&
        isOctal(s[i + 2]) && isOctal(s[i + 3])) {
      int v = (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0');
      if (v == 0) return detail::lineError(kWhat, n, "escaped NUL in " + std::string(field), s);
      out += static_cast<char>(v);
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Splits on single spaces: empty fields are kept (two spaces = one empty field).
bool nextSpaceField(std::string_view& rest, std::string_view& field, bool& more) {
  if (!more) return false;
  auto sp = rest.find(' ');
  if (sp == std::string_view::npos) {
    field = rest;
    rest = {};
    more = false;
  } else {
    field = rest.substr(0, sp);
    rest.remove_prefix(sp + 1);
  }
  return true;
}
}  // namespace

Result<std::vector<MountInfoEntry>> parseMountInfo(std::string_view text) {
  if (auto e = detail::checkNoNul(kWhat, text)) return *e;
  std::vector<MountInfoEntry> out;
  detail::LineReader reader(text);
  std::string_view line;
  while (reader.next(line)) {
    const size_t n = reader.lineNo();
    if (detail::trimBlanks(line).empty()) continue;
    std::string_view rest = line;
    bool more = true;
    std::string_view f[6];
    for (auto& field : f) {
      if (!nextSpaceField(rest, field, more)) {
        return detail::lineError(kWhat, n, "truncated line (need at least 10 fields)", line);
      }
    }
    MountInfoEntry e;
    auto id = detail::parseU64(f[0]);
    if (!id) return detail::lineError(kWhat, n, "invalid mount id", f[0]);
    auto parent = detail::parseU64(f[1]);
    if (!parent) return detail::lineError(kWhat, n, "invalid parent id", f[1]);
    auto dev = parseDevNum(f[2]);
    if (!dev) return detail::lineError(kWhat, n, dev.error().message);
    e.mountId = *id;
    e.parentId = *parent;
    e.dev = *dev;
    if (f[3].empty() || f[4].empty()) {
      return detail::lineError(kWhat, n, "empty root or mount point", line);
    }
    auto root = unescape(f[3], n, "root");
    if (!root) return root.error();
    auto mp = unescape(f[4], n, "mount point");
    if (!mp) return mp.error();
    e.root = std::move(*root);
    e.mountPoint = std::move(*mp);
    e.options = std::string(f[5]);
    std::string_view field;
    bool sawSeparator = false;
    while (nextSpaceField(rest, field, more)) {
      if (field == "-") {
        sawSeparator = true;
        break;
      }
      if (field.empty()) return detail::lineError(kWhat, n, "empty optional field", line);
      e.optionalFields.emplace_back(field);
    }
    if (!sawSeparator) return detail::lineError(kWhat, n, "missing ' - ' separator", line);
    std::string_view tail[3];
    for (auto& t : tail) {
      if (!nextSpaceField(rest, t, more)) {
        return detail::lineError(kWhat, n, "truncated after ' - ' (need fstype source options)",
                                 line);
      }
    }
    if (more) return detail::lineError(kWhat, n, "extra fields after super options", line);
    if (tail[0].empty()) return detail::lineError(kWhat, n, "empty filesystem type", line);
    auto type = unescape(tail[0], n, "filesystem type");
    if (!type) return type.error();
    auto source = unescape(tail[1], n, "source");
    if (!source) return source.error();
    e.fsType = std::move(*type);
    e.source = std::move(*source);
    e.superOptions = std::string(tail[2]);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace cxiosync
