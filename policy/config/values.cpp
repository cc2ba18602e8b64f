// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/values.h"

#include "policy/quote.h"

#include <array>
#include <charconv>
#include <limits>

namespace cxiosync {

namespace {

constexpr std::string_view kSpace = " \t\r\n";

std::string_view trim(std::string_view s) {
  auto b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(kSpace);
  return s.substr(b, e - b + 1);
}

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

Error invalid(std::string_view text, std::string_view expected) {
  return makeError("invalid value " + quoteForMessage(text) + ": expected " +
                   std::string(expected));
}

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

// Parses "<digits>[.<digits>]" at the start of `s`; advances `s`. Returns false if no digits.
struct Number {
  uint64_t whole = 0;
  uint64_t frac = 0;       // fractional digits as an integer
  uint64_t fracScale = 1;  // 10^(number of fractional digits)
  bool overflow = false;
  bool hasFraction = false;
};

bool takeNumber(std::string_view& s, Number& n) {
  size_t i = 0;
  while (i < s.size() && isDigit(s[i])) ++i;
  if (i == 0) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + i, n.whole);
  (void)p;
  if (ec != std::errc()) n.overflow = true;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && isDigit(s[j])) {
      // Beyond 18 digits the extra precision is meaningless; ignore it.
      if (n.fracScale < 1000000000000000000ULL) {
        n.frac = n.frac * 10 + static_cast<uint64_t>(s[j] - '0');
        n.fracScale *= 10;
      }
      ++j;
    }
    if (j == i + 1) return false;  // "1." is not a number
    n.hasFraction = true;
    i = j;
  }
  s.remove_prefix(i);
  return true;
}

// whole * mult + frac * mult / fracScale, with overflow detection. Rounds down.
bool scale(const Number& n, uint64_t mult, uint64_t& out) {
  if (n.overflow) return false;
  if (mult != 0 && n.whole > std::numeric_limits<uint64_t>::max() / mult) return false;
  uint64_t v = n.whole * mult;
  // frac < fracScale <= 1e18; frac * mult may overflow for big multipliers: split.
  __uint128_t f = static_cast<__uint128_t>(n.frac) * mult / n.fracScale;
  if (f > std::numeric_limits<uint64_t>::max() - v) return false;
  out = v + static_cast<uint64_t>(f);
  return true;
}

constexpr uint64_t kKi = 1024;

Result<uint64_t> parseBytes(std::string_view text, uint64_t letterBase, bool rate) {
  std::string_view s = trim(text);
  std::string_view expected = rate ? "a rate in bytes/s such as 10000000, 10M, 10MiB/s or 10MB/s"
                                   : "a size in bytes such as 1048576, 1M or 1MiB";
  Number n;
  if (!takeNumber(s, n)) return invalid(text, expected);
  s = trim(s);
  if (rate && s.size() >= 2 && s.substr(s.size() - 2) == "/s") {
    s = trim(s.substr(0, s.size() - 2));
  }
  uint64_t mult = 0;
  static constexpr std::array<char, 4> kLetters = {'k', 'm', 'g', 't'};
  if (s.empty() || iequals(s, "b")) {
    mult = 1;
  } else {
    size_t power = 0;
    for (size_t i = 0; i < kLetters.size(); ++i) {
      if (lower(s[0]) == kLetters[i]) power = i + 1;
    }
    if (power == 0) return invalid(text, expected);
    std::string_view rest = s.substr(1);
    uint64_t base = 0;
    if (rest.empty()) {
      base = letterBase;
    } else if (iequals(rest, "i") || iequals(rest, "ib")) {
      base = kKi;
    } else if (iequals(rest, "b")) {
      base = 1000;
    } else {
      return invalid(text, expected);
    }
    mult = 1;
    for (size_t i = 0; i < power; ++i) mult *= base;
  }
  uint64_t out = 0;
  if (!scale(n, mult, out)) return makeError("value " + quoteForMessage(text) + " is too large");
  return out;
}

}  // namespace

Result<bool> parseBoolean(std::string_view text) {
  std::string_view s = trim(text);
  for (auto t : {"1", "yes", "y", "true", "t", "on"}) {
    if (iequals(s, t)) return true;
  }
  for (auto f : {"0", "no", "n", "false", "f", "off"}) {
    if (iequals(s, f)) return false;
  }
  return invalid(text, "a boolean (on/off, yes/no, true/false, 1/0)");
}

Result<BoostPermission> parseBoostPermission(std::string_view text) {
  std::string_view s = trim(text);
  if (iequals(s, "allow")) return BoostPermission::Allow;
  if (iequals(s, "deny")) return BoostPermission::Deny;
  auto b = parseBoolean(s);
  if (b) return *b ? BoostPermission::Allow : BoostPermission::Deny;
  return invalid(text, "allow or deny");
}

Result<BoostCeiling> parseBoostCeiling(std::string_view text) {
  std::string_view s = trim(text);
  if (iequals(s, "inherit")) return BoostCeiling{};
  if (iequals(s, "max") || iequals(s, "infinity")) return BoostCeiling{BoostCeiling::Kind::Max, 0};
  if (s.empty() || !isDigit(s[0])) {
    return invalid(text, "inherit, max or a rate in bytes/s such as 10M or 10MiB/s");
  }
  auto r = parseRate(s);
  if (!r) return r.error();
  if (*r == 0) return makeError("boost ceiling must be above 0 bytes/s (use boost: deny)");
  // UINT64_MAX is how io.max and the bus spell "max"; a number must mean a number.
  if (*r == std::numeric_limits<uint64_t>::max()) {
    return makeError("boost ceiling " + quoteForMessage(text) + " is too large (use max)");
  }
  return BoostCeiling{BoostCeiling::Kind::Bytes, *r};
}

Result<uint64_t> parseSize(std::string_view text) {
  return parseBytes(text, kKi, false);
}

Result<uint64_t> parseRate(std::string_view text) {
  return parseBytes(text, 1000, true);
}

Result<int64_t> parseTimespanMs(std::string_view text, int64_t bareUnitMs) {
  struct Unit {
    std::string_view name;
    int64_t ms;
  };
  static constexpr std::array<Unit, 18> kUnits = {{
      {"ms", 1},
      {"msec", 1},
      {"s", 1000},
      {"sec", 1000},
      {"second", 1000},
      {"seconds", 1000},
      {"m", 60000},
      {"min", 60000},
      {"minute", 60000},
      {"minutes", 60000},
      {"h", 3600000},
      {"hr", 3600000},
      {"hour", 3600000},
      {"hours", 3600000},
      {"d", 86400000},
      {"day", 86400000},
      {"days", 86400000},
      {"secs", 1000},
  }};
  constexpr std::string_view kExpected = "a time span such as 30, 30s, 2min or 1min 30s";
  std::string_view s = trim(text);
  if (s.empty()) return invalid(text, kExpected);
  uint64_t totalMs = 0;
  while (!s.empty()) {
    Number n;
    if (!takeNumber(s, n)) return invalid(text, kExpected);
    s = s.substr(std::min(s.find_first_not_of(" \t"), s.size()));
    size_t u = 0;
    while (u < s.size() && ((s[u] >= 'a' && s[u] <= 'z') || (s[u] >= 'A' && s[u] <= 'Z'))) ++u;
    int64_t unitMs = bareUnitMs;
    if (u > 0) {
      std::string_view name = s.substr(0, u);
      unitMs = 0;
      for (const auto& unit : kUnits) {
        if (name == unit.name) unitMs = unit.ms;
      }
      if (unitMs == 0) return invalid(text, kExpected);
      s.remove_prefix(u);
    }
    uint64_t ms = 0;
    if (!scale(n, static_cast<uint64_t>(unitMs), ms) ||
        ms > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - totalMs) {
      return makeError("time span " + quoteForMessage(text) + " is too large");
    }
    totalMs += ms;
    s = trim(s);
  }
  return static_cast<int64_t>(totalMs);
}

namespace {

Result<std::chrono::seconds> wholeSeconds(std::string_view text, int64_t min, int64_t max,
                                          std::string_view what) {
  auto ms = parseTimespanMs(text, 1000);
  if (!ms) return ms.error();
  if (*ms % 1000 != 0) {
    return makeError(std::string(what) + " " + quoteForMessage(text) +
                     " is not a whole number of seconds");
  }
  int64_t sec = *ms / 1000;
  if (sec < min || sec > max) {
    return makeError(std::string(what) + " " + quoteForMessage(text) + " is out of range (" +
                     std::to_string(min) + "s.." + std::to_string(max) + "s)");
  }
  return std::chrono::seconds(sec);
}

}  // namespace

Result<std::chrono::seconds> parseMaxBoost(std::string_view text) {
  return wholeSeconds(text, kMinBoostSeconds, kMaxBoostSeconds, "max boost duration");
}

Result<uint32_t> parseBudgetPercent(std::string_view text) {
  std::string_view s = trim(text);
  if (!s.empty() && s.back() == '%') s = trim(s.substr(0, s.size() - 1));
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
    return invalid(text, "a percentage such as 25 or 25%");
  }
  if (v < kMinBudgetPercent || v > kMaxBudgetPercent) {
    return makeError("budget percentage " + quoteForMessage(text) +
                     " is out of range (1..100; use " + "boost: deny to never boost)");
  }
  return v;
}

Result<std::chrono::seconds> parseBudgetWindow(std::string_view text) {
  return wholeSeconds(text, kMinBudgetWindowSeconds, kMaxBudgetWindowSeconds, "budget window");
}

Result<BoostBudget> parseBoostBudget(std::string_view text) {
  constexpr std::string_view kExpected = "'<percent>% of <time span>' such as '25% of 120s'";
  std::string_view s = trim(text);
  auto pct = s.find('%');
  if (pct == std::string_view::npos) return invalid(text, kExpected);
  auto percent = parseBudgetPercent(s.substr(0, pct + 1));
  if (!percent) return percent.error();
  std::string_view rest = trim(s.substr(pct + 1));
  if (!rest.empty() && rest.front() == '/') {
    rest = trim(rest.substr(1));
  } else if (rest.size() > 3 &&
             (iequals(rest.substr(0, 3), "of ") || iequals(rest.substr(0, 3), "of\t"))) {
    rest = trim(rest.substr(3));
  } else if (rest.size() > 4 &&
             (iequals(rest.substr(0, 4), "per ") || iequals(rest.substr(0, 4), "per\t"))) {
    rest = trim(rest.substr(4));
  } else {
    return invalid(text, kExpected);
  }
  auto window = parseBudgetWindow(rest);
  if (!window) return window.error();
  return BoostBudget{*percent, *window};
}

Result<DetectorKind> parseDetector(std::string_view text) {
  std::string_view s = trim(text);
  if (iequals(s, "auto")) return DetectorKind::Auto;
  if (iequals(s, "tracefs")) return DetectorKind::Tracefs;
  if (iequals(s, "procfs")) return DetectorKind::Procfs;
  return invalid(text, "auto, tracefs or procfs");
}

Result<TenantSync> parseTenantSync(std::string_view text) {
  std::string_view s = trim(text);
  if (iequals(s, "self")) return TenantSync::Self;
  if (iequals(s, "foreign")) return TenantSync::Foreign;
  return invalid(text, "self or foreign");
}

Result<std::chrono::milliseconds> parsePollInterval(std::string_view text) {
  auto ms = parseTimespanMs(text, 1);
  if (!ms) return ms.error();
  if (*ms < kMinPollIntervalMs || *ms > kMaxPollIntervalMs) {
    return makeError("poll interval " + quoteForMessage(text) + " is out of range (" +
                     std::to_string(kMinPollIntervalMs) + "ms.." +
                     std::to_string(kMaxPollIntervalMs) + "ms)");
  }
  return std::chrono::milliseconds(*ms);
}

Result<uint64_t> parseMinDirtyBytes(std::string_view text) {
  auto v = parseSize(text);
  if (!v) return v.error();
  if (*v > kMaxMinDirtyBytes) {
    return makeError("size " + quoteForMessage(text) + " is out of range (0..1TiB)");
  }
  return *v;
}

std::string formatBoolean(bool value) {
  return value ? "on" : "off";
}

std::string formatBoostPermission(BoostPermission value) {
  return value == BoostPermission::Allow ? "allow" : "deny";
}

std::string formatBoostCeiling(const BoostCeiling& value) {
  switch (value.kind) {
    case BoostCeiling::Kind::Inherit:
      return "inherit";
    case BoostCeiling::Kind::Max:
      return "max";
    case BoostCeiling::Kind::Bytes:
      break;
  }
  return std::to_string(value.bytesPerSecond);
}

std::string formatSeconds(std::chrono::seconds value) {
  return std::to_string(value.count()) + "s";
}

std::string formatBoostBudget(const BoostBudget& value) {
  return std::to_string(value.percent) + "% of " + formatSeconds(value.window);
}

std::string formatDetector(DetectorKind value) {
  switch (value) {
    case DetectorKind::Tracefs:
      return "tracefs";
    case DetectorKind::Procfs:
      return "procfs";
    case DetectorKind::Auto:
      break;
  }
  return "auto";
}

std::string formatTenantSync(TenantSync value) {
  return value == TenantSync::Foreign ? "foreign" : "self";
}

std::string formatMilliseconds(std::chrono::milliseconds value) {
  return std::to_string(value.count()) + "ms";
}

Status setPolicyKnob(PolicySettings& settings, std::string_view knob, std::string_view value,
                     const ValueSource& source) {
  if (knob == kKnobSyncIsolation) {
    auto v = parseBoolean(value);
    if (!v) return v.error();
    settings.syncIsolation = Sourced<bool>{*v, source};
  } else if (knob == kKnobBoost) {
    auto v = parseBoostPermission(value);
    if (!v) return v.error();
    settings.boost = Sourced<BoostPermission>{*v, source};
  } else if (knob == kKnobBoostCeiling) {
    auto v = parseBoostCeiling(value);
    if (!v) return v.error();
    settings.boostCeiling = Sourced<BoostCeiling>{*v, source};
  } else if (knob == kKnobMaxBoostSeconds) {
    auto v = parseMaxBoost(value);
    if (!v) return v.error();
    settings.maxBoost = Sourced<std::chrono::seconds>{*v, source};
  } else if (knob == kKnobBoostBudget) {
    auto v = parseBoostBudget(value);
    if (!v) return v.error();
    settings.boostBudget = Sourced<BoostBudget>{*v, source};
  } else if (knob == kKnobTenant) {
    auto v = parseBoolean(value);
    if (!v) return v.error();
    settings.tenant = Sourced<bool>{*v, source};
  } else if (knob == kKnobTenantSync) {
    auto v = parseTenantSync(value);
    if (!v) return v.error();
    settings.tenantSync = Sourced<TenantSync>{*v, source};
  } else {
    return makeError("unknown policy knob " + quoteForMessage(knob) +
                     " (expected sync_isolation, boost, boost_ceiling, max_boost_seconds, "
                     "boost_budget, tenant or tenant_sync)");
  }
  return Ok{};
}

std::vector<KnobView> describePolicy(const EffectivePolicy& p) {
  return {
      {kKnobSyncIsolation, formatBoolean(p.syncIsolation.value), p.syncIsolation.source.describe()},
      {kKnobBoost, formatBoostPermission(p.boost.value), p.boost.source.describe()},
      {kKnobBoostCeiling, formatBoostCeiling(p.boostCeiling.value),
       p.boostCeiling.source.describe()},
      {kKnobMaxBoostSeconds, formatSeconds(p.maxBoost.value), p.maxBoost.source.describe()},
      {kKnobBoostBudget, formatBoostBudget(p.boostBudget.value), p.boostBudget.source.describe()},
      {kKnobTenant, formatBoolean(p.tenant.value), p.tenant.source.describe()},
      {kKnobTenantSync, formatTenantSync(p.tenantSync.value), p.tenantSync.source.describe()},
  };
}

std::vector<KnobView> describeGlobals(const GlobalSettings& g, const GlobalSources& s) {
  return {
      {"detector", formatDetector(g.detector), s.detector.describe()},
      {"poll_interval_ms", std::to_string(g.pollInterval.count()), s.pollInterval.describe()},
      {"watch_fsync", formatBoolean(g.watchFsync), s.watchFsync.describe()},
      {"min_dirty_bytes", std::to_string(g.minDirtyBytes), s.minDirtyBytes.describe()},
      {"dry_run", formatBoolean(g.dryRun), s.dryRun.describe()},
      {"lift_on_shutdown", formatBoolean(g.liftOnShutdown), s.liftOnShutdown.describe()},
  };
}

}  // namespace cxiosync
