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
  EXPECT_EQ(formatRate(1048576), "1 MiB/s");
  EXPECT_EQ(formatRate(10485760), "10 MiB/s");
  EXPECT_EQ(formatRate(500), "500 B/s");
  // Issue 27: a limit reads in the unit it was written in. IOWriteBandwidthMax=10M is
  // 10,000,000 B/s (systemd's base 1000): "10 MB/s", not the old "9.5 MiB/s";
  // BoostCeiling=50MiB/s is "50 MiB/s". Values exact in neither family are rounded (binary).
  EXPECT_EQ(formatRate(10000000), "10 MB/s");
  EXPECT_EQ(formatRate(52428800), "50 MiB/s");
  EXPECT_EQ(formatRate(1000), "1 kB/s");
  EXPECT_EQ(formatRate(1500000), "1500 kB/s");
  EXPECT_EQ(formatRate(2048000), "2000 KiB/s");  // exact in both: the shorter number
  EXPECT_EQ(formatRate(1000000000000), "1 TB/s");
  EXPECT_EQ(formatRate(1234567), "1.2 MiB/s");
  EXPECT_EQ(formatRate(123456789ull * 1024), "117.7 GiB/s");  // exact, but too many digits
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
