// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/render.h"

#include <gtest/gtest.h>

namespace cxiosync::ctl {
namespace {

dbus::CgroupView sample() {
  dbus::CgroupView c;
  c.path = "/backup.slice";
  c.ioMax = {{"8:0", dbus::kWireMax, 1048576, dbus::kWireMax, dbus::kWireMax}};
  c.effective = {{"8:0", 1048576, dbus::kWireMax, "/backup.slice", ""}};
  c.fileDirty = 536870912;
  c.policy = {{"sync_isolation", "on", "default"}, {"boost", "deny", "runtime"}};
  c.boosted = true;
  return c;
}

TEST(Render, CgroupJsonUsesNullForMax) {
  EXPECT_EQ(cgroupJson(sample()).dump(false),
            R"({"cgroup":"/backup.slice","io_max":[{"device":"8:0","rbps":null,"wbps":1048576,)"
            R"("riops":null,"wiops":null}],"effective_limits":[{"device":"8:0","wbps":1048576,)"
            R"("wiops":null,"wbps_holder":"/backup.slice","wiops_holder":null}],)"
            R"("file_dirty":536870912,"file_writeback":0,"policy":{"sync_isolation":)"
            R"({"value":"on","source":"default"},"boost":{"value":"deny","source":"runtime"}},)"
            R"("boosted":true})");
}

TEST(Render, CgroupsTable) {
  RenderStyle st;
  std::string t = cgroupsText({sample()}, st);
  EXPECT_NE(t.find("CGROUP         ISOLATION  BOOST"), std::string::npos) << t;
  EXPECT_NE(t.find("1 MiB/s (8:0)"), std::string::npos) << t;
  EXPECT_NE(t.find("512.0 MiB"), std::string::npos) << t;
  EXPECT_NE(t.find("1 cgroup listed."), std::string::npos) << t;
  st.legend = false;
  t = cgroupsText({sample()}, st);
  EXPECT_EQ(t.find("CGROUP"), std::string::npos);
  EXPECT_EQ(t.find("listed"), std::string::npos);
  EXPECT_EQ(t.find('\033'), std::string::npos) << "no colour unless asked";
}

TEST(Render, ShowNamesSources) {
  std::string t = cgroupText(sample(), RenderStyle{});
  EXPECT_NE(t.find("boost           deny   runtime"), std::string::npos) << t;
  EXPECT_NE(t.find("HELD BY"), std::string::npos) << t;
}

TEST(Render, EmptyListsSayNothingIsThere) {
  EXPECT_EQ(boostsText({}, RenderStyle{}), "0 boosts active.\n");
  EXPECT_EQ(syncersText({}, RenderStyle{}), "0 syncers in a sync call.\n");
  EXPECT_EQ(boostsJson({}).dump(false), "[]");
}

TEST(Render, Events) {
  dbus::EventView e{
      "BoostEnded", {{"cgroup", "/a"}, {"reason", "syncers-left"}}, {{"duration_usec", 12300000}}};
  EXPECT_EQ(eventText(e), R"(BoostEnded cgroup=/a reason=syncers-left duration_usec="12.3 s")");
  EXPECT_EQ(
      eventJson(e).dump(false),
      R"({"event":"BoostEnded","cgroup":"/a","reason":"syncers-left","duration_usec":12300000})");
  dbus::EventView s{
      "BoostStarted", {}, {{"original_wbps", 1048576}, {"boosted_wbps", dbus::kWireMax}}};
  EXPECT_EQ(eventJson(s).dump(false),
            R"({"event":"BoostStarted","original_wbps":1048576,"boosted_wbps":null})");
}

TEST(Render, StatusText) {
  dbus::StatusView s;
  s.state = "running";
  s.version = "0.1.0";
  s.startedRealtimeUsec = 1000000;
  RenderStyle st;
  st.nowRealtimeUsec = 61000000;
  std::string t = statusText(s, st);
  EXPECT_NE(t.find("       State: running"), std::string::npos) << t;
  EXPECT_NE(t.find("1min 0s ago"), std::string::npos) << t;
  EXPECT_NE(t.find("(built-in defaults)"), std::string::npos) << t;
}

TEST(Render, MetricsJson) {
  auto j = metricsJson(
      "# HELP x help\n# TYPE x counter\nx 7\ny{a=\"1\",b=\"q\\\"z\"} 12.5 1700000000\n\n");
  ASSERT_TRUE(j);
  EXPECT_EQ(
      j->dump(false),
      R"([{"name":"x","labels":{},"value":7},{"name":"y","labels":{"a":"1","b":"q\"z"},"value":12.5}])");
  EXPECT_FALSE(metricsJson("x\n"));
  EXPECT_FALSE(metricsJson("x notanumber\n"));
  EXPECT_FALSE(metricsJson("x{a=1} 3\n"));
  EXPECT_FALSE(metricsJson("x{a=\"1\" 3\n"));
}

}  // namespace
}  // namespace cxiosync::ctl
