// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/proc.h"

#include "policy/formats/text_util.h"

namespace cxiosync {

namespace {
constexpr std::string_view kStat = "/proc stat";
constexpr std::string_view kSyscall = "/proc syscall";
constexpr std::string_view kCgroup = "/proc cgroup";
constexpr std::string_view kDeleted = " (deleted)";

// Removes one trailing "\n" (or "\r\n").
std::string_view chompOne(std::string_view s) {
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

bool isStateChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
}  // namespace

Result<ProcStat> parseProcStat(std::string_view text) {
  if (auto e = detail::checkNoNul(kStat, text)) return *e;
  std::string_view s = chompOne(text);
  if (s.empty()) return detail::lineError(kStat, 1, "empty file");
  auto open = s.find('(');
  auto close = s.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return detail::lineError(kStat, 1, "expected 'PID (COMM) STATE ...'", s);
  }
  ProcStat out;
  std::string_view pidText = detail::trimBlanks(s.substr(0, open));
  auto pid = detail::parseI64(pidText);
  if (!pid || *pid <= 0) return detail::lineError(kStat, 1, "invalid pid", pidText);
  out.pid = *pid;
  out.comm = std::string(s.substr(open + 1, close - open - 1));

  // Fields 3.. after the comm. We need up to field 22 (starttime).
  std::string_view rest = s.substr(close + 1);
  std::string_view fields[20];
  size_t count = 0;
  std::string_view f;
  while (count < 20 && detail::nextField(rest, f)) fields[count++] = f;
  if (count < 20) {
    return detail::lineError(
        kStat, 1,
        "truncated: " + std::to_string(count + 2) + " fields, need at least 22 (up to starttime)");
  }
  if (fields[0].size() != 1 || !isStateChar(fields[0][0])) {
    return detail::lineError(kStat, 1, "invalid state (field 3)", fields[0]);
  }
  out.state = fields[0][0];
  auto ppid = detail::parseI64(fields[1]);
  if (!ppid || *ppid < 0) return detail::lineError(kStat, 1, "invalid ppid (field 4)", fields[1]);
  out.ppid = *ppid;
  auto start = detail::parseU64(fields[19]);
  if (!start) return detail::lineError(kStat, 1, "invalid starttime (field 22)", fields[19]);
  out.startTimeTicks = *start;
  return out;
}

Result<ProcSyscall> parseProcSyscall(std::string_view text) {
  if (auto e = detail::checkNoNul(kSyscall, text)) return *e;
  std::string_view s = chompOne(text);
  if (s.find('\n') != std::string_view::npos) {
    return detail::lineError(kSyscall, 2, "expected a single line");
  }
  std::string_view rest = s;
  std::string_view first;
  if (!detail::nextField(rest, first)) return detail::lineError(kSyscall, 1, "empty file");
  ProcSyscall out;
  std::string_view f;
  if (first == "running") {
    if (detail::nextField(rest, f)) {
      return detail::lineError(kSyscall, 1, "unexpected text after 'running'", f);
    }
    out.kind = ProcSyscall::Kind::Running;
    return out;
  }
  auto nr = detail::parseI64(first);
  if (!nr) {
    return detail::lineError(kSyscall, 1, "expected 'running' or a syscall number", first);
  }
  out.nr = *nr;
  const bool inSyscall = *nr >= 0;
  out.kind = inSyscall ? ProcSyscall::Kind::InSyscall : ProcSyscall::Kind::NotInSyscall;
  const size_t want = inSyscall ? 8 : 2;
  uint64_t vals[8] = {};
  size_t count = 0;
  while (detail::nextField(rest, f)) {
    if (count == want) {
      return detail::lineError(kSyscall, 1,
                               "too many fields (expected " + std::to_string(want + 1) + ")", s);
    }
    auto v = detail::parseHex0x(f);
    if (!v) return detail::lineError(kSyscall, 1, "invalid hex value (expected 0x...)", f);
    vals[count++] = *v;
  }
  if (count != want) {
    return detail::lineError(
        kSyscall, 1,
        "truncated: " + std::to_string(count + 1) + " fields, expected " + std::to_string(want + 1),
        s);
  }
  if (inSyscall) {
    for (size_t i = 0; i < 6; ++i) out.args[i] = vals[i];
    out.sp = vals[6];
    out.pc = vals[7];
  } else {
    out.sp = vals[0];
    out.pc = vals[1];
  }
  return out;
}

Result<ProcCgroup> parseProcCgroup(std::string_view text) {
  if (auto e = detail::checkNoNul(kCgroup, text)) return *e;
  ProcCgroup out;
  detail::LineReader reader(text);
  std::string_view line;
  while (reader.next(line)) {
    const size_t n = reader.lineNo();
    if (line.empty()) continue;
    auto c1 = line.find(':');
    auto c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) {
      return detail::lineError(kCgroup, n, "expected 'ID:CONTROLLERS:PATH'", line);
    }
    std::string_view idText = line.substr(0, c1);
    auto id = detail::parseU64(idText);
    if (!id || *id > UINT32_MAX) {
      return detail::lineError(kCgroup, n, "invalid hierarchy id", idText);
    }
    ProcCgroupLine entry;
    entry.hierarchyId = static_cast<uint32_t>(*id);
    entry.controllers = std::string(line.substr(c1 + 1, c2 - c1 - 1));
    std::string_view path = line.substr(c2 + 1);
    if (path.empty() || path.front() != '/') {
      return detail::lineError(kCgroup, n, "cgroup path must start with '/'", line);
    }
    const bool isV2 = entry.hierarchyId == 0 && entry.controllers.empty();
    if (isV2 && path.size() > kDeleted.size() && path.ends_with(kDeleted)) {
      path.remove_suffix(kDeleted.size());
      entry.deleted = true;
    }
    entry.path = std::string(path);
    if (isV2) {
      if (out.v2) return detail::lineError(kCgroup, n, "second cgroup v2 ('0::') line");
      out.v2 = std::move(entry);
    } else {
      out.v1.push_back(std::move(entry));
    }
  }
  return out;
}

Result<std::optional<std::string>> parseProcCgroupV2(std::string_view text) {
  auto all = parseProcCgroup(text);
  if (!all) return all.error();
  if (!all->v2) return std::optional<std::string>{};
  return std::optional<std::string>{std::move(all->v2->path)};
}

}  // namespace cxiosync
