// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/format.h"

#include <gtest/gtest.h>

namespace cxiosync::ctl {
namespace {

TEST(Format, Bytes) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(536870912), "512.0 MiB");
  EXPECT_EQ(formatBytes(UINT64_MAX), "16.0 EiB");
}

TEST(Format, RatesAndIops) {
  EXPECT_EQ(formatRate(1048576), "1.0 MiB/s");
  EXPECT_EQ(formatRate(10485760), "10.0 MiB/s");
  EXPECT_EQ(formatRate(500), "500 B/s");
  EXPECT_EQ(formatRate(UINT64_MAX), "max");
  EXPECT_EQ(formatIops(200), "200 IOPS");
  EXPECT_EQ(formatIops(UINT64_MAX), "max");
}

TEST(Format, Durations) {
  EXPECT_EQ(formatDuration(0), "0");
  EXPECT_EQ(formatDuration(850), "850 us");
  EXPECT_EQ(formatDuration(12000), "12 ms");
  EXPECT_EQ(formatDuration(12300000), "12.3 s");
  EXPECT_EQ(formatDuration(125000000), "2min 5s");
  EXPECT_EQ(formatDuration(3720000000ull), "1h 2min");
  EXPECT_EQ(formatDuration(90000000000ull), "1d 1h");
}

TEST(Format, Timestamps) {
  EXPECT_EQ(formatTimestamp(0), "n/a");
  EXPECT_EQ(formatTimestamp(1764446400000000ull), "2025-11-29 20:00:00 UTC");
}

TEST(Format, TableAlignsColumnsAndDropsTrailingSpaces) {
  Table t({"NAME", "SIZE", "NOTE"});
  t.rightAlign(1);
  t.addRow({"a", "1 B", ""});
  t.addRow({"longer", "100 B", "x"});
  EXPECT_EQ(t.render(true, false),
            "NAME     SIZE  NOTE\n"
            "a         1 B\n"
            "longer  100 B  x\n");
  EXPECT_EQ(t.render(false, false),
            "a         1 B\n"
            "longer  100 B  x\n");
  EXPECT_EQ(t.render(true, true).substr(0, 4), "\033[1m");
}

TEST(Format, WidthCountsCodePoints) {
  EXPECT_EQ(displayWidth("→"), 1u);
  EXPECT_EQ(displayWidth("a→b"), 3u);
}

}  // namespace
}  // namespace cxiosync::ctl
