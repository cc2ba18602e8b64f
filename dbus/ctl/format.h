#pragma once
// Human output for cxiosyncctl: units that read, aligned tables. Pure functions.
#include <cstdint>
#include <string>
#include <vector>

namespace cxiosync::ctl {

std::string formatBytes(uint64_t bytes);       // "0 B", "512 B", "1.0 KiB", "512.0 MiB"
std::string formatRate(uint64_t bytesPerSec);  // "1.0 MiB/s"; UINT64_MAX → "max"
std::string formatIops(uint64_t iops);         // "200 IOPS"; UINT64_MAX → "max"
std::string formatDuration(
    uint64_t usec);  // "0", "850 us", "12 ms", "12.3 s", "2min 5s", "1h 2min"
std::string formatTimestamp(uint64_t realtimeUsec);  // "2026-11-29 20:00:00 UTC"; 0 → "n/a"

// An aligned text table in systemctl style: upper-case headers, two spaces between columns,
// the last column not padded. Colour only through `bold` (set by the caller on a terminal).
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void addRow(std::vector<std::string> cells);
  void rightAlign(size_t column) { right_.push_back(column); }
  size_t rows() const { return rows_.size(); }
  // legend: print the header line. bold: ANSI bold for the header.
  std::string render(bool legend, bool bold) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> right_;
};

// Display width of UTF-8 text (code points; good enough for paths and names).
size_t displayWidth(const std::string& s);

}  // namespace cxiosync::ctl
