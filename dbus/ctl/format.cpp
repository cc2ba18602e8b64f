#include "dbus/ctl/format.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace cxiosync::ctl {

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

size_t displayWidth(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) {
    if ((c & 0xc0) != 0x80) ++w;
  }
  return w;
}

void Table::addRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::render(bool legend, bool bold) const {
  std::vector<size_t> width(headers_.size(), 0);
  if (legend) {
    for (size_t i = 0; i < headers_.size(); ++i) width[i] = displayWidth(headers_[i]);
  }
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], displayWidth(row[i]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      bool last = i + 1 == cells.size();
      size_t pad = width[i] - displayWidth(cells[i]);
      bool right = std::find(right_.begin(), right_.end(), i) != right_.end();
      if (right) out.append(pad, ' ');
      out += cells[i];
      if (!right && !last) out.append(pad, ' ');
      if (!last) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out;
  if (legend) {
    std::string h = line(headers_);
    if (bold) {
      h.pop_back();
      h = "\033[1m" + h + "\033[0m\n";
    }
    out += h;
  }
  for (const auto& row : rows_) out += line(row);
  return out;
}

}  // namespace cxiosync::ctl
