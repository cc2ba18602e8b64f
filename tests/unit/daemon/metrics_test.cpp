// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/core/metrics.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace cxiosync {
namespace {

using namespace cxiosync::testing;

TEST(MetricsTest, Format) {
  MetricsSnapshot m;
  m.detector = "tracefs";
  m.boostsBySyscall = {{"sync", 3}, {"syncfs", 1}};
  m.boostEndsByReason = {{"syncers-left", 4}};
  m.refusalsByReason = {{"self-sync", 2}};
  m.syncsBySyscall = {{"sync", 5}};
  m.boostSecondsTotal = 2.5;
  m.activeBoosts = 1;
  m.cgroupsWatched = 12;
  m.ticks = 345;
  m.oldestSyncWaitSeconds = 12.5;
  m.limitedCgroups = {{"/cg1", 33554432, 4096}, {"/we\"ird", 0, 0}};
  std::string t = formatMetrics(m);
  EXPECT_NE(t.find("# TYPE cxiosync_boosts_total counter\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_detector_info{detector=\"tracefs\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_boosts_total{syscall=\"sync\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_boosts_total{syscall=\"syncfs\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_boost_ends_total{reason=\"syncers-left\"} 4\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_refusals_total{reason=\"self-sync\"} 2\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_syncs_seen_total{syscall=\"sync\"} 5\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_boost_seconds_total 2.5\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_active_boosts 1\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_ticks_total 345\n"), std::string::npos);
  EXPECT_NE(t.find("# TYPE cxiosync_oldest_sync_wait_seconds gauge\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_oldest_sync_wait_seconds 12.5\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_cgroup_dirty_bytes{cgroup=\"/cg1\"} 33554432\n"), std::string::npos);
  EXPECT_NE(t.find("cxiosync_cgroup_writeback_bytes{cgroup=\"/cg1\"} 4096\n"), std::string::npos);
  EXPECT_NE(t.find("{cgroup=\"/we\\\"ird\"}"), std::string::npos);
  EXPECT_EQ(t.substr(t.size() - 6), "# EOF\n");
  // Every non-comment line is "name{labels} value" or "name value".
  size_t pos = 0;
  while (pos < t.size()) {
    size_t nl = t.find('\n', pos);
    std::string line = t.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(line.rfind("cxiosync_", 0), 0u) << line;
    EXPECT_NE(line.rfind(' '), std::string::npos) << line;
  }
}

TEST(MetricsTest, EscapeLabelValue) {
  EXPECT_EQ(escapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

// Issue 16: a label value that is not UTF-8 made metrics.prom unparsable for the textfile
// collector. Bytes become the \xNN text (then the format's own \\ escape): the label reads
// "/\xff", the name D-Bus gives the cgroup.
TEST(MetricsTest, LabelValuesAreUtf8) {
  EXPECT_EQ(escapeLabelValue("/\xff"), "/\\\\xff");
  EXPECT_EQ(escapeLabelValue("/caf\xc3\xa9"), "/caf\xc3\xa9");
  MetricsSnapshot m;
  m.detector = "procfs";
  m.refusalsByReason = {{"\xfe", 1}};
  m.limitedCgroups = {{"/\xff", 4096, 0}};
  const std::string text = formatMetrics(m);
  EXPECT_NE(text.find("cxiosync_cgroup_dirty_bytes{cgroup=\"/\\\\xff\"} 4096\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("{reason=\"\\\\xfe\"} 1\n"), std::string::npos) << text;
  for (unsigned char c : text) EXPECT_LT(c, 0x80) << "only ASCII here";
}

TEST(MetricsTest, FileIsRateLimitedAndAtomic) {
  TempDir dir;
  MetricsFile f(dir.path(), std::chrono::milliseconds(5000));
  auto t0 = std::chrono::steady_clock::time_point(std::chrono::seconds(100));
  EXPECT_TRUE(f.due(t0));
  ASSERT_TRUE(f.write("x 1\n", t0));
  EXPECT_EQ(readFile(dir.file("metrics.prom")), "x 1\n");
  EXPECT_FALSE(f.due(t0 + std::chrono::seconds(1)));
  EXPECT_TRUE(f.due(t0 + std::chrono::seconds(5)));
  EXPECT_FALSE(std::filesystem::exists(dir.file("metrics.prom.tmp")));
}

}  // namespace
}  // namespace cxiosync
