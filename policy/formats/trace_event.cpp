// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/trace_event.h"

#include "policy/formats/text_util.h"

namespace cxiosync {

namespace {
constexpr std::string_view kWhat = "trace";
constexpr size_t kMaxContext = 256;

Error traceError(std::string_view problem, std::string_view line) {
  return makeError(std::string(kWhat) + ": " + std::string(problem) + ": '" +
                   detail::excerpt(line, 160) + "'");
}

bool consumePrefix(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool isFlagChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.';
}

// "CPU:N [LOST M EVENTS]" / "CPU:N [LOST EVENTS]", printed from column 0. Event lines
// always start with padding (comm is right-aligned in 16 columns and at most 15 bytes), so
// a task named "CPU:1 [LOST x" cannot pass for a marker.
std::optional<Result<TraceEvent>> parseLost(std::string_view line) {
  std::string_view s = line;
  while (!s.empty() && detail::isBlank(s.back())) s.remove_suffix(1);
  if (!consumePrefix(s, "CPU:")) return std::nullopt;
  auto sp = s.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  auto cpu = detail::parseU64(s.substr(0, sp));
  s.remove_prefix(sp + 1);
  if (!consumePrefix(s, "[LOST ")) return std::nullopt;
  if (!cpu || *cpu > UINT32_MAX) return traceError("invalid CPU in lost-events marker", line);
  TraceEvent ev;
  ev.kind = TraceEvent::Kind::LostEvents;
  ev.cpu = static_cast<uint32_t>(*cpu);
  if (s == "EVENTS]") return Result<TraceEvent>(ev);
  auto sp2 = s.find(' ');
  if (sp2 == std::string_view::npos || s.substr(sp2) != " EVENTS]") {
    return traceError("malformed lost-events marker", line);
  }
  auto n = detail::parseU64(s.substr(0, sp2));
  if (!n) return traceError("invalid count in lost-events marker", line);
  ev.lostEvents = *n;
  return Result<TraceEvent>(ev);
}

// "12.345678" -> 12345678 us; "123456789" (counter clocks) -> raw value.
std::optional<uint64_t> parseTimestamp(std::string_view s) {
  auto dot = s.find('.');
  if (dot == std::string_view::npos) return detail::parseU64(s);
  auto secs = detail::parseU64(s.substr(0, dot));
  std::string_view frac = s.substr(dot + 1);
  if (!secs || !detail::isDigits(frac) || frac.size() > 9) return std::nullopt;
  std::string micros(frac.substr(0, std::min<size_t>(frac.size(), 6)));
  micros.resize(6, '0');
  auto us = detail::parseU64(micros);
  if (!us) return std::nullopt;
  if (*secs > (UINT64_MAX - *us) / 1000000) return std::nullopt;
  return *secs * 1000000 + *us;
}

struct Context {
  std::string comm;
  int64_t tid = 0;
  std::optional<uint32_t> tgid;
  uint32_t cpu = 0;
  uint64_t ts = 0;
  std::string_view body;
};

// Tries to read the context with "[CPU]" at `open` ('[' index). nullopt: not a match here.
std::optional<Context> tryContext(std::string_view line, size_t open) {
  Context c;
  size_t close = open + 1;
  while (close < line.size() && line[close] >= '0' && line[close] <= '9') ++close;
  if (close == open + 1 || close >= line.size() || line[close] != ']') return std::nullopt;
  auto cpu = detail::parseU64(line.substr(open + 1, close - open - 1));
  if (!cpu || *cpu > UINT32_MAX) return std::nullopt;
  c.cpu = static_cast<uint32_t>(*cpu);

  // Before: "COMM-TID" [" (TGID)"] padding.
  std::string_view before = detail::trimBlanks(line.substr(0, open));
  if (!before.empty() && before.back() == ')') {
    auto lp = before.rfind('(');
    if (lp == std::string_view::npos) return std::nullopt;
    std::string_view tg = detail::trimBlanks(before.substr(lp + 1, before.size() - lp - 2));
    if (tg.find_first_not_of('-') == std::string_view::npos && !tg.empty()) {
      // "(-------)": tgid unknown
    } else {
      auto t = detail::parseU64(tg);
      if (!t || *t > UINT32_MAX) return std::nullopt;
      c.tgid = static_cast<uint32_t>(*t);
    }
    before = detail::trimBlanks(before.substr(0, lp));
  }
  auto dash = before.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto tid = detail::parseI64(before.substr(dash + 1));
  if (!tid || *tid < 0) return std::nullopt;
  c.tid = *tid;
  c.comm = std::string(detail::trimBlanks(before.substr(0, dash)));

  // After: [flags] timestamp ":" " " body.
  std::string_view rest = line.substr(close + 1);
  std::string_view tok;
  if (!detail::nextField(rest, tok)) return std::nullopt;
  if (tok.back() != ':') {
    for (char ch : tok) {
      if (!isFlagChar(ch)) return std::nullopt;
    }
    if (tok.size() > 8) return std::nullopt;
    if (!detail::nextField(rest, tok)) return std::nullopt;
    if (tok.back() != ':') return std::nullopt;
  }
  auto ts = parseTimestamp(tok.substr(0, tok.size() - 1));
  if (!ts) return std::nullopt;
  c.ts = *ts;
  if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  c.body = rest;
  return c;
}

Status parseSyscallArgs(std::string_view inner, TraceEvent& ev, std::string_view line) {
  inner = detail::trimBlanks(inner);
  if (inner.empty()) return Ok{};
  while (true) {
    auto comma = inner.find(',');
    std::string_view part = detail::trimBlanks(inner.substr(0, comma));
    auto colon = part.rfind(':');
    if (colon == std::string_view::npos) return traceError("malformed syscall argument", line);
    std::string_view name = detail::trimBlanks(part.substr(0, colon));
    auto sp = name.rfind(' ');  // verbose option: "unsigned int fd"
    if (sp != std::string_view::npos) name = name.substr(sp + 1);
    std::string_view val = detail::trimBlanks(part.substr(colon + 1));
    if (val.starts_with("0x") || val.starts_with("0X")) val.remove_prefix(2);
    auto v = detail::parseHexDigits(val);
    if (name.empty() || !v) return traceError("malformed syscall argument", line);
    ev.args.emplace_back(std::string(name), *v);
    if (name == "fd") {
      ev.fd = static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(*v)));
    }
    if (comma == std::string_view::npos) break;
    inner.remove_prefix(comma + 1);
  }
  return Ok{};
}

Status parseWritebackQueue(std::string_view body, TraceEvent& ev, std::string_view line) {
  if (!consumePrefix(body, "bdi ")) return traceError("writeback_queue: expected 'bdi'", line);
  auto colon = body.find(": ");
  if (colon == std::string_view::npos || colon == 0) {
    return traceError("writeback_queue: malformed bdi name", line);
  }
  ev.bdiName = std::string(body.substr(0, colon));
  if (auto d = parseDevNum(ev.bdiName)) ev.bdi = *d;
  body.remove_prefix(colon + 2);
  std::string_view tok;
  bool haveReason = false;
  while (detail::nextField(body, tok)) {
    if (tok == "sb_dev") {
      std::string_view devText;
      if (!detail::nextField(body, devText)) {
        return traceError("writeback_queue: truncated sb_dev", line);
      }
      auto d = parseDevNum(devText);
      if (!d) return traceError("writeback_queue: invalid sb_dev", line);
      ev.sbDev = *d;
      continue;
    }
    auto eq = tok.find('=');
    if (eq == std::string_view::npos) {
      return traceError("writeback_queue: expected key=value", line);
    }
    std::string_view key = tok.substr(0, eq);
    std::string_view val = tok.substr(eq + 1);
    if (key == "reason") {
      if (val.empty()) return traceError("writeback_queue: empty reason", line);
      ev.reason = std::string(val);
      haveReason = true;
    } else if (key == "cgroup_ino") {
      auto v = detail::parseU64(val);
      if (!v) return traceError("writeback_queue: invalid cgroup_ino", line);
      ev.cgroupIno = *v;
    } else if (key == "nr_pages") {
      auto v = detail::parseI64(val);
      if (!v) return traceError("writeback_queue: invalid nr_pages", line);
      ev.nrPages = *v;
    } else if (key == "sync_mode") {
      auto v = detail::parseI64(val);
      if (!v) return traceError("writeback_queue: invalid sync_mode", line);
      ev.syncMode = *v;
    }
    // kupdate, range_cyclic, background and unknown keys: ignored.
  }
  if (!haveReason) return traceError("writeback_queue: missing reason", line);
  return Ok{};
}

Status parseBody(std::string_view body, TraceEvent& ev, std::string_view line) {
  std::string_view b = body;
  if (consumePrefix(b, "writeback_queue: ")) {
    ev.kind = TraceEvent::Kind::WritebackQueue;
    return parseWritebackQueue(b, ev, line);
  }
  if (!b.starts_with("sys_")) return Ok{};
  size_t i = 4;
  while (i < b.size() && isIdentChar(b[i])) ++i;
  std::string_view name = b.substr(4, i - 4);
  std::string_view after = b.substr(i);
  if (!after.empty() && after.front() == '(') {
    if (name.empty()) return traceError("syscall enter without a name", line);
    std::string_view trimmed = detail::trimBlanks(after);
    if (trimmed.back() != ')') return traceError("truncated syscall enter", line);
    ev.kind = TraceEvent::Kind::SyscallEnter;
    ev.syscall = std::string(name);
    return parseSyscallArgs(trimmed.substr(1, trimmed.size() - 2), ev, line);
  }
  if (consumePrefix(after, " -> ")) {
    if (name.empty()) return traceError("syscall exit without a name", line);
    auto v = detail::parseHex0x(detail::trimBlanks(after));
    if (!v) return traceError("invalid syscall return value (expected 0xHEX)", line);
    ev.kind = TraceEvent::Kind::SyscallExit;
    ev.syscall = std::string(name);
    ev.ret = detail::asSigned(*v);
    return Ok{};
  }
  return Ok{};  // e.g. raw_syscalls "sys_enter: NR 162 (...)": not interpreted
}
}  // namespace

Result<TraceEvent> parseTraceLine(std::string_view line) {
  if (line.find('\0') != std::string_view::npos) return traceError("NUL byte in line", line);
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (detail::trimBlanks(line).empty()) return traceError("empty line", line);
  if (auto lost = parseLost(line)) return std::move(*lost);

  // The first "[CPU]" with a valid "comm-tid" before it and "[flags] timestamp: " after it.
  // The kernel pads the context to a fixed width, so "[CPU]" starts within the first
  // kMaxContext bytes; the bound keeps hostile lines (many " [1]") linear.
  size_t pos = 0;
  while (true) {
    auto open = line.find(" [", pos);
    if (open == std::string_view::npos || open > kMaxContext) {
      return traceError("not a trace line", line);
    }
    pos = open + 1;
    auto ctx = tryContext(line, open + 1);
    if (!ctx) continue;
    TraceEvent ev;
    ev.comm = std::move(ctx->comm);
    ev.tid = ctx->tid;
    ev.tgid = ctx->tgid;
    ev.cpu = ctx->cpu;
    ev.timestampUsec = ctx->ts;
    ev.body = std::string(ctx->body);
    auto st = parseBody(ctx->body, ev, line);
    if (!st) return st.error();
    return ev;
  }
}

}  // namespace cxiosync
