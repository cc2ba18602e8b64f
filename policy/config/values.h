// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Text <-> value for every knob, shared by the YAML config, the [X-CxIOSync] drop-in parser and
// runtime settings (D-Bus/CLI), so one spelling means the same everywhere. Pure.
//
// Error messages name the offending text and what was expected, without location: the caller
// prefixes "file:line:col: key.path: ".
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/knobs.h"
#include "policy/result.h"

namespace cxiosync {

// Ranges (inclusive). Documented in docs/configuration.md.
inline constexpr int64_t kMinBoostSeconds = 1;
inline constexpr int64_t kMaxBoostSeconds = 86400;
inline constexpr uint32_t kMinBudgetPercent = 1;
inline constexpr uint32_t kMaxBudgetPercent = 100;
inline constexpr int64_t kMinBudgetWindowSeconds = 1;
inline constexpr int64_t kMaxBudgetWindowSeconds = 86400;
inline constexpr int64_t kMinPollIntervalMs = 10;
inline constexpr int64_t kMaxPollIntervalMs = 60000;
inline constexpr uint64_t kMaxMinDirtyBytes = uint64_t{1} << 40;  // 1 TiB

// systemd's boolean spellings, case-insensitive: 1/yes/y/true/t/on, 0/no/n/false/f/off.
Result<bool> parseBoolean(std::string_view text);

// "allow" | "deny" (case-insensitive); a boolean spelling also works (yes = allow).
Result<BoostPermission> parseBoostPermission(std::string_view text);

// "inherit" | "max" | "infinity" | a rate (see parseRate), 1 <= bytes/s < UINT64_MAX.
Result<BoostCeiling> parseBoostCeiling(std::string_view text);

// A byte count: "1048576", "1M", "1 MiB", "512K", "1.5G". K/M/G/T are base 1024 here (like
// systemd's MemoryMax=); KiB/MiB/... are 1024, KB/MB/... are 1000. Suffixes case-insensitive.
Result<uint64_t> parseSize(std::string_view text);

// A rate in bytes/s: "10000000", "10M", "10MiB/s", "10 MB/s". K/M/G/T are base 1000 here (like
// systemd's IOWriteBandwidthMax=); KiB/MiB/... are 1024, KB/MB/... 1000. "/s" is optional.
Result<uint64_t> parseRate(std::string_view text);

// A systemd-style time span: "30", "30s", "2min", "1min 30s", "1h". A bare number is in
// `bareUnitMs` milliseconds. Units: ms/msec, s/sec/second(s), m/min/minute(s), h/hr/hour(s),
// d/day(s). Returns milliseconds.
Result<int64_t> parseTimespanMs(std::string_view text, int64_t bareUnitMs);

// max_boost_seconds / MaxBoostSec=: a time span (bare number = seconds), whole seconds,
// kMinBoostSeconds..kMaxBoostSeconds.
Result<std::chrono::seconds> parseMaxBoost(std::string_view text);

// boost_budget / BoostBudget=: "<percent>% of <timespan>" ("25% of 120s", "25%/2min",
// "25% per 2min"). Percent 1..100, window 1 s..1 day, whole seconds.
Result<BoostBudget> parseBoostBudget(std::string_view text);
// The two halves of a budget, for the YAML mapping form {percent: 25, window_seconds: 120}.
Result<uint32_t> parseBudgetPercent(std::string_view text);  // "25" or "25%"
Result<std::chrono::seconds> parseBudgetWindow(std::string_view text);

// tenant_sync / TenantSync=: "self" | "foreign" (case-insensitive).
Result<TenantSync> parseTenantSync(std::string_view text);

// "auto" | "tracefs" | "procfs".
Result<DetectorKind> parseDetector(std::string_view text);

// poll_interval_ms: time span, bare number = milliseconds, kMinPollIntervalMs..kMaxPollIntervalMs.
Result<std::chrono::milliseconds> parsePollInterval(std::string_view text);

// min_dirty_bytes: parseSize, 0..kMaxMinDirtyBytes.
Result<uint64_t> parseMinDirtyBytes(std::string_view text);

// Canonical text, which the parsers above accept back ("on", "allow", "inherit", "10000000",
// "30s", "25% of 120s", "auto", "100ms", "1048576").
std::string formatBoolean(bool value);  // "on" / "off"
std::string formatBoostPermission(BoostPermission value);
std::string formatBoostCeiling(const BoostCeiling& value);  // bytes/s as a plain number
std::string formatSeconds(std::chrono::seconds value);
std::string formatBoostBudget(const BoostBudget& value);
std::string formatDetector(DetectorKind value);
std::string formatTenantSync(TenantSync value);  // "self" / "foreign"
std::string formatMilliseconds(std::chrono::milliseconds value);

// The per-cgroup knob names used by YAML and runtime settings.
inline constexpr std::string_view kKnobSyncIsolation = "sync_isolation";
inline constexpr std::string_view kKnobBoost = "boost";
inline constexpr std::string_view kKnobBoostCeiling = "boost_ceiling";
inline constexpr std::string_view kKnobMaxBoostSeconds = "max_boost_seconds";
inline constexpr std::string_view kKnobBoostBudget = "boost_budget";
inline constexpr std::string_view kKnobTenant = "tenant";
inline constexpr std::string_view kKnobTenantSync = "tenant_sync";

// Sets one per-cgroup knob from text (runtime settings: `cxiosyncctl set CG boost deny`).
// Unknown knob names and bad values are errors; `settings` is unchanged on error.
Status setPolicyKnob(PolicySettings& settings, std::string_view knob, std::string_view value,
                     const ValueSource& source);

// For `show`: every knob as (name, canonical value text, source text), in a fixed order.
struct KnobView {
  std::string_view name;  // "sync_isolation", ..., or a global key ("detector", ...)
  std::string value;      // canonical text, e.g. "on", "25% of 120s", "1048576"
  std::string source;     // ValueSource::describe(): "default", "runtime", "file:line"
};
std::vector<KnobView> describePolicy(const EffectivePolicy& policy);
std::vector<KnobView> describeGlobals(const GlobalSettings& settings, const GlobalSources& sources);

}  // namespace cxiosync
