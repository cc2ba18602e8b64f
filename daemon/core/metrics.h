// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Metrics in the Prometheus/OpenMetrics text format, written to `<run-dir>/metrics.prom`
// (temp file + rename, on a tmpfs) for node_exporter's textfile collector. Counter families
// are declared with their `_total` sample name (the text format 0.0.4 convention the
// textfile collector parses); the file ends with "# EOF".
//
// Formatting is pure (formatMetrics); MetricsFile owns the rate limit and the write.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/result.h"

namespace cxiosync {

inline constexpr const char* kMetricsFile = "metrics.prom";

struct MetricsSnapshot {
  std::string detector;                               // "tracefs", "procfs", "none"
  std::map<std::string, uint64_t> boostsBySyscall;    // boosts started, by trigger syscall
  std::map<std::string, uint64_t> boostEndsByReason;  // boosts ended, by end reason
  std::map<std::string, uint64_t> refusalsByReason;   // refused boosts, by reason
  std::map<std::string, uint64_t> syncsBySyscall;     // syncers seen, by syscall
  double boostSecondsTotal = 0;                       // finished + running boosts
  uint64_t activeBoosts = 0;
  uint64_t keptChanged = 0;  // restores skipped because someone else changed io.max
  uint64_t errors = 0;       // failed io.max/journal writes
  uint64_t cgroupsWatched = 0;
  uint64_t ticks = 0;                // sensing + planning passes (poll, detector wake-up, deadline)
  double oldestSyncWaitSeconds = 0;  // how long the longest-waiting known syncer has waited
  struct CgroupBytes {
    std::string cgroup;
    uint64_t dirty = 0;
    uint64_t writeback = 0;
  };
  std::vector<CgroupBytes> limitedCgroups;  // cgroups with a finite write limit
};

std::string formatMetrics(const MetricsSnapshot& m);

// A label value of the text format: bytes as UTF-8 text (textFromBytes, policy/bytes_text.h),
// then the format's escapes (\\, \", \n).
std::string escapeLabelValue(const std::string& v);

class MetricsFile {
 public:
  MetricsFile(std::string runDir, std::chrono::milliseconds minInterval);
  // True when `now` is at least minInterval after the last write (or nothing was written).
  bool due(std::chrono::steady_clock::time_point now) const;
  // Writes the text (temp + rename, no fsync) and remembers `now`.
  Status write(const std::string& text, std::chrono::steady_clock::time_point now);
  const std::string& path() const { return path_; }

 private:
  std::string runDir_;
  std::string path_;
  std::chrono::milliseconds minInterval_;
  std::optional<std::chrono::steady_clock::time_point> last_;
};

}  // namespace cxiosync
