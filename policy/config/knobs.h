#pragma once
// The policy knobs of DESIGN.md §3 as plain values, and where each effective value came from.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace cxiosync {

// Where a value came from, for `show`: "runtime", "default", or a file:line.
struct ValueSource {
  enum class Kind { Default, Yaml, DropIn, Runtime } kind = Kind::Default;
  std::string file;  // empty for Default/Runtime
  int line = 0;
  std::string describe() const;  // "default", "runtime", "/etc/cxiosync/cxiosync.yaml:12"
};

template <class T>
struct Sourced {
  T value{};
  ValueSource source;
};

enum class BoostPermission { Allow, Deny };

// boost_ceiling: inherit (syncer's own effective limit, max if unlimited), max, or bytes/s.
struct BoostCeiling {
  enum class Kind { Inherit, Max, Bytes } kind = Kind::Inherit;
  uint64_t bytesPerSecond = 0;  // Kind::Bytes only
  bool operator==(const BoostCeiling&) const = default;
};

// boost_budget: a dirtier is boosted at most `percent` of any sliding `window`.
struct BoostBudget {
  uint32_t percent = 100;  // 1..100
  std::chrono::seconds window{60};
  bool operator==(const BoostBudget&) const = default;
};

// The per-cgroup policy after layering and inheritance: every field has a value and a source.
struct EffectivePolicy {
  Sourced<bool> syncIsolation;
  Sourced<BoostPermission> boost;
  Sourced<BoostCeiling> boostCeiling;
  Sourced<std::chrono::seconds> maxBoost;
  Sourced<BoostBudget> boostBudget;
};

enum class DetectorKind { Auto, Tracefs, Procfs };

struct GlobalSettings {
  DetectorKind detector = DetectorKind::Auto;
  std::chrono::milliseconds pollInterval{100};
  bool watchFsync = false;
  uint64_t minDirtyBytes = 1 << 20;  // 1 MiB
  bool dryRun = false;
  bool liftOnShutdown = true;
};

}  // namespace cxiosync
