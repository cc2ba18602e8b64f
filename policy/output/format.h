// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Human units for cxiosyncctl and cxiosync-loop: sizes, rates, durations, times that read.
// Pure functions (policy/output: the table model renders its typed cells with these).
#include <cstdint>
#include <string>
#include <string_view>

namespace cxiosync::output {

std::string formatBytes(uint64_t bytes);  // "0 B", "512 B", "1.0 KiB", "512.0 MiB"
// "1 MiB/s", "10 MB/s" (exact, in the unit family that divides it), "1.5 MiB/s"; UINT64_MAX → "max"
std::string formatRate(uint64_t bytesPerSec);
std::string formatIops(uint64_t iops);  // "200 IOPS"; UINT64_MAX → "max"
std::string formatDuration(
    uint64_t usec);  // "0", "850 us", "12 ms", "12.3 s", "2min 5s", "1h 2min"
std::string formatTimestamp(uint64_t realtimeUsec);  // "2026-11-29 20:00:00 UTC"; 0 → "n/a"

// Display width of UTF-8 text (code points; good enough for paths and names).
size_t displayWidth(std::string_view s);

}  // namespace cxiosync::output
