// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/output/format.h"

#include <cstdio>
#include <ctime>

namespace cxiosync::output {

namespace {

constexpr uint64_t kMax = UINT64_MAX;

std::string scaled(uint64_t value, const char* const* units, size_t n) {
  if (value < 1024) return std::to_string(value) + " " + units[0];
  double v = static_cast<double>(value);
  size_t i = 0;
  while (v >= 1024.0 && i + 1 < n) {
    v /= 1024.0;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[i]);
  return buf;
}

}  // namespace

std::string formatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  return scaled(bytes, kUnits, 7);
}

std::string formatRate(uint64_t bps) {
  if (bps == kMax) return "max";
  static const char* const kUnits[] = {"B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s", "PiB/s", "EiB/s"};
  static const char* const kSiUnits[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s", "EB/s"};
  // A limit is shown in the unit it was most likely written in: IOWriteBandwidthMax=10M is
  // 10,000,000 (systemd's base 1000) and reads "10 MB/s", not "9.5 MiB/s"; 50MiB/s reads
  // "50 MiB/s". Exact values only; anything else is rounded in binary units.
  size_t bin = 0, si = 0;
  uint64_t b = bps, d = bps;
  while (b != 0 && b % 1024 == 0 && bin + 1 < 7) {
    b /= 1024;
    ++bin;
  }
  while (d != 0 && d % 1000 == 0 && si + 1 < 7) {
    d /= 1000;
    ++si;
  }
  const bool binOk = bin > 0 && b<10000, siOk = si> 0 && d < 10000;
  if (siOk && (!binOk || d < b)) return std::to_string(d) + " " + kSiUnits[si];
  if (binOk) return std::to_string(b) + " " + kUnits[bin];
  return scaled(bps, kUnits, 7);
}

std::string formatIops(uint64_t iops) {
  if (iops == kMax) return "max";
  return std::to_string(iops) + " IOPS";
}

std::string formatDuration(uint64_t usec) {
  char buf[64];
  if (usec == 0) return "0";
  if (usec < 1000) return std::to_string(usec) + " us";
  if (usec < 1000000) return std::to_string(usec / 1000) + " ms";
  if (usec < 60ull * 1000000) {
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(usec) / 1e6);
    return buf;
  }
  uint64_t s = usec / 1000000;
  if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%llumin %llus", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
    return buf;
  }
  if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lluh %llumin", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>((s % 3600) / 60));
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%llud %lluh", static_cast<unsigned long long>(s / 86400),
                static_cast<unsigned long long>((s % 86400) / 3600));
  return buf;
}

std::string formatTimestamp(uint64_t realtimeUsec) {
  if (realtimeUsec == 0) return "n/a";
  time_t t = static_cast<time_t>(realtimeUsec / 1000000);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

size_t displayWidth(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s) {
    if ((c & 0xc0) != 0x80) ++w;
  }
  return w;
}

}  // namespace cxiosync::output
