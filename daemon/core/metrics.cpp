// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/core/metrics.h"

#include <optional>

#include "daemon/kernel/fs.h"
#include "policy/bytes_text.h"

namespace cxiosync {
namespace {

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

std::string number(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void labelled(std::string& out, const char* name, const char* label,
              const std::map<std::string, uint64_t>& values) {
  for (const auto& [k, v] : values) {
    out += name;
    out += '{';
    out += label;
    out += "=\"" + escapeLabelValue(k) + "\"} " + std::to_string(v) + '\n';
  }
}

}  // namespace

std::string escapeLabelValue(const std::string& v) {
  // Label values are UTF-8 in the text format, and the textfile collector rejects the whole
  // file for one that is not (a cgroup named $'\xff', issue 16): bytes go through the one
  // escape of policy/bytes_text.h first, so "/\xff" here names the cgroup as D-Bus does.
  std::string out;
  for (char c : textFromBytes(v)) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

std::string formatMetrics(const MetricsSnapshot& m) {
  std::string out;
  family(out, "cxiosync_detector_info", "gauge", "The sync detector in use.");
  out += "cxiosync_detector_info{detector=\"" + escapeLabelValue(m.detector) + "\"} 1\n";
  family(out, "cxiosync_boosts_total", "counter",
         "Boosts started, by the syscall of the sync that triggered them.");
  labelled(out, "cxiosync_boosts_total", "syscall", m.boostsBySyscall);
  family(out, "cxiosync_boost_ends_total", "counter", "Boosts ended, by reason.");
  labelled(out, "cxiosync_boost_ends_total", "reason", m.boostEndsByReason);
  family(out, "cxiosync_refusals_total", "counter", "Boosts refused, by reason.");
  labelled(out, "cxiosync_refusals_total", "reason", m.refusalsByReason);
  family(out, "cxiosync_boost_seconds_total", "counter",
         "Seconds limits spent boosted (summed over cgroups and devices).");
  out += "cxiosync_boost_seconds_total " + number(m.boostSecondsTotal) + '\n';
  family(out, "cxiosync_active_boosts", "gauge", "Boosts in force now.");
  out += "cxiosync_active_boosts " + std::to_string(m.activeBoosts) + '\n';
  family(out, "cxiosync_syncs_seen_total", "counter", "Syncing threads seen, by syscall.");
  labelled(out, "cxiosync_syncs_seen_total", "syscall", m.syncsBySyscall);
  family(out, "cxiosync_restores_kept_changed_total", "counter",
         "Restores skipped because someone else changed io.max during the boost.");
  out += "cxiosync_restores_kept_changed_total " + std::to_string(m.keptChanged) + '\n';
  family(out, "cxiosync_errors_total", "counter", "Failed io.max or journal writes.");
  out += "cxiosync_errors_total " + std::to_string(m.errors) + '\n';
  family(out, "cxiosync_cgroups_watched", "gauge", "Cgroups in the last snapshot.");
  out += "cxiosync_cgroups_watched " + std::to_string(m.cgroupsWatched) + '\n';
  family(out, "cxiosync_ticks_total", "counter",
         "Sensing and planning passes: polls (poll_interval_ms; 1 s while tracefs sees "
         "nothing to do), detector wake-ups, deadlines.");
  out += "cxiosync_ticks_total " + std::to_string(m.ticks) + '\n';
  family(out, "cxiosync_oldest_sync_wait_seconds", "gauge",
         "How long the longest-waiting sync call the detector knows has been waiting (0: none).");
  out += "cxiosync_oldest_sync_wait_seconds " + number(m.oldestSyncWaitSeconds) + '\n';
  family(out, "cxiosync_cgroup_dirty_bytes", "gauge",
         "memory.stat file_dirty of cgroups under a finite write limit.");
  for (const auto& c : m.limitedCgroups)
    out += "cxiosync_cgroup_dirty_bytes{cgroup=\"" + escapeLabelValue(c.cgroup) + "\"} " +
           std::to_string(c.dirty) + '\n';
  family(out, "cxiosync_cgroup_writeback_bytes", "gauge",
         "memory.stat file_writeback of cgroups under a finite write limit.");
  for (const auto& c : m.limitedCgroups)
    out += "cxiosync_cgroup_writeback_bytes{cgroup=\"" + escapeLabelValue(c.cgroup) + "\"} " +
           std::to_string(c.writeback) + '\n';
  out += "# EOF\n";
  return out;
}

MetricsFile::MetricsFile(std::string runDir, std::chrono::milliseconds minInterval)
    : runDir_(std::move(runDir)), minInterval_(minInterval) {
  path_ = runDir_ + "/" + kMetricsFile;
}

bool MetricsFile::due(std::chrono::steady_clock::time_point now) const {
  return !last_ || now - *last_ >= minInterval_;
}

Status MetricsFile::write(const std::string& text, std::chrono::steady_clock::time_point now) {
  last_ = now;
  return writeFileAtomically(path_, text);
}

}  // namespace cxiosync
