// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/wire.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "policy/bytes_text.h"

namespace cxiosync::dbus {
namespace {

CgroupPath P(const char* s) {
  return *CgroupPath::parse(s);
}

TEST(Wire, SourcesDescribeThemselves) {
  EXPECT_EQ(wire::describeSource(ValueSource{}), "default");
  EXPECT_EQ(wire::describeSource(ValueSource{ValueSource::Kind::Runtime, {}, 0}), "runtime");
  EXPECT_EQ(wire::describeSource(ValueSource{ValueSource::Kind::Yaml, "/etc/c.yaml", 7}),
            "/etc/c.yaml:7");
  EXPECT_EQ(wire::describeSource(ValueSource{ValueSource::Kind::DropIn, "/etc/x.conf", 0}),
            "/etc/x.conf");
  EXPECT_EQ(wire::describeSource(ValueSource{ValueSource::Kind::DropIn, "", 0}), "drop-in");
}

TEST(Wire, PolicyRowsInIdlOrder) {
  EffectivePolicy p;
  p.syncIsolation.value = true;
  p.boost.value = BoostPermission::Deny;
  p.boostCeiling.value = BoostCeiling{BoostCeiling::Kind::Bytes, 1000};
  p.maxBoost.value = std::chrono::seconds(30);
  p.boostBudget.value = BoostBudget{25, std::chrono::seconds(120)};
  p.tenant.value = true;
  p.tenantSync.value = TenantSync::Foreign;
  auto rows = wire::policyRows(p);
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0].knob + "=" + rows[0].value, "sync_isolation=on");
  EXPECT_EQ(rows[1].knob + "=" + rows[1].value, "boost=deny");
  EXPECT_EQ(rows[2].knob + "=" + rows[2].value, "boost_ceiling=1000");
  EXPECT_EQ(rows[3].knob + "=" + rows[3].value, "max_boost_seconds=30");
  EXPECT_EQ(rows[4].knob + "=" + rows[4].value, "boost_budget=25%/120s");
  EXPECT_EQ(rows[5].knob + "=" + rows[5].value, "tenant=on");
  EXPECT_EQ(rows[6].knob + "=" + rows[6].value, "tenant_sync=foreign");
}

TEST(Wire, CgroupRoundTrip) {
  CgroupInfo c;
  c.path = P("/a/b");
  c.ioMax = {IoMaxEntry{DevNum{8, 0}, IoLimits{std::nullopt, 1048576, kUnlimited, 5}}};
  EffectiveLimit e;
  e.device = DevNum{8, 0};
  e.wbps = 1048576;
  e.wbpsHolder = P("/a");
  c.effectiveLimits = {e};
  c.fileDirty = 10;
  c.fileWriteback = 20;
  c.boosted = true;
  auto v = wire::fromWire(wire::toWire(c));
  EXPECT_EQ(v.path, "/a/b");
  ASSERT_EQ(v.ioMax.size(), 1u);
  EXPECT_EQ(v.ioMax[0].device, "8:0");
  EXPECT_EQ(v.ioMax[0].rbps, kWireMax) << "absent key reads as max";
  EXPECT_EQ(v.ioMax[0].wbps, 1048576u);
  EXPECT_EQ(v.ioMax[0].wiops, 5u);
  ASSERT_EQ(v.effective.size(), 1u);
  EXPECT_EQ(v.effective[0].wbpsHolder, "/a");
  EXPECT_EQ(v.effective[0].wiopsHolder, "") << "no holder for an unlimited key";
  EXPECT_EQ(v.fileDirty, 10u);
  EXPECT_EQ(v.fileWriteback, 20u);
  EXPECT_EQ(v.knob("sync_isolation"), "off");
  EXPECT_TRUE(v.boosted);
}

TEST(Wire, BoostAndSyncerRoundTrip) {
  BoostInfo b;
  b.cgroup = P("/a");
  b.dirtier = P("/a/b");
  b.device = DevNum{253, 1};
  b.original.wbps = 100;
  b.boosted.wbps = kUnlimited;
  b.syncerTids = {1, 2};
  b.reason = "r";
  auto bv = wire::fromWire(wire::toWire(b));
  EXPECT_EQ(bv.device, "253:1");
  EXPECT_EQ(bv.dirtier, "/a/b");
  EXPECT_EQ(bv.original.wbps, 100u);
  EXPECT_EQ(bv.original.rbps, kWireMax);
  EXPECT_EQ(bv.syncerTids, (std::vector<int64_t>{1, 2}));
  SyncerInfo s;
  s.tid = 7;
  s.cgroup = P("/x");
  s.syscall = "syncfs";
  s.targetDevice = DevNum{8, 16};
  auto sv = wire::fromWire(wire::toWire(s));
  EXPECT_EQ(sv.device, "8:16");
  EXPECT_EQ(sv.cgroup, "/x");
  s.targetDevice.reset();
  EXPECT_EQ(wire::fromWire(wire::toWire(s)).device, "");
}

TEST(Wire, StatusRoundTripAndTypeChecks) {
  StatusInfo s;
  s.version = "1";
  s.activeBoosts = 3;
  s.configFiles = {"/a", "/b"};
  auto v = wire::statusFromWire(wire::toWire(s));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->activeBoosts, 3u);
  EXPECT_EQ(v->configFiles.size(), 2u);
  wire::Options bad{{"active_boosts", sdbus::Variant(std::string("three"))}};
  EXPECT_FALSE(wire::statusFromWire(bad));
  wire::Options future{{"new_key", sdbus::Variant(true)}};
  EXPECT_TRUE(wire::statusFromWire(future)) << "unknown keys are ignored";
}

// Issue 16, bug A: one name that is not UTF-8 made sd-bus refuse the whole reply. Every
// string toWire makes is text: the bytes in the reversible \xNN form (policy/bytes_text.h).
TEST(Wire, BytesThatAreNotUtf8GoOutEscaped) {
  CgroupInfo c;
  c.path = P("/u/\xff");
  EffectiveLimit e;
  e.device = DevNum{8, 0};
  e.wbps = 1048576;
  e.wbpsHolder = P("/u/\xff");
  c.effectiveLimits = {e};
  c.policy.boost.source = ValueSource{ValueSource::Kind::DropIn, "/etc/x\xfe.conf", 3};
  auto v = wire::fromWire(wire::toWire(c));
  EXPECT_EQ(v.path, "/u/\\xff");
  EXPECT_EQ(v.effective.at(0).wbpsHolder, "/u/\\xff");
  EXPECT_EQ(v.policy.at(1).source, "/etc/x\\xfe.conf:3");
  EXPECT_EQ(bytesFromText(v.path), "/u/\xff");

  SyncerInfo s;
  s.comm = "\xff\xc3";
  s.cgroup = P("/caf\xc3\xa9/\\xff");  // valid UTF-8 passes; a literal "\xff" becomes \x5c
  s.syscall = "sync";
  auto sv = wire::fromWire(wire::toWire(s));
  EXPECT_EQ(sv.comm, "\\xff\\xc3");
  EXPECT_EQ(sv.cgroup, "/caf\xc3\xa9/\\x5cxff");
  EXPECT_EQ(bytesFromText(sv.cgroup), s.cgroup.display());

  BoostInfo b;
  b.cgroup = P("/\xff");
  b.dirtier = P("/\xff/x");
  b.reason = "sync(2) by 7 (\xff) in /\xff";
  auto bv = wire::fromWire(wire::toWire(b));
  EXPECT_EQ(bv.cgroup, "/\\xff");
  EXPECT_EQ(bv.dirtier, "/\\xff/x");
  EXPECT_EQ(bv.reason, "sync(2) by 7 (\\xff) in /\\xff");

  StatusInfo st;
  st.cgroupRoot = "/sys/fs/\xff";
  st.configFiles = {"/etc/\xfe.yaml"};
  st.stateDetail = "cgroup /\xff gone";
  auto stv = wire::statusFromWire(wire::toWire(st));
  ASSERT_TRUE(stv);
  EXPECT_EQ(stv->cgroupRoot, "/sys/fs/\\xff");
  EXPECT_EQ(stv->configFiles.at(0), "/etc/\\xfe.yaml");
  EXPECT_EQ(stv->stateDetail, "cgroup /\\xff gone");
  EXPECT_EQ(wire::text("ok \xc3\xa9"), "ok \xc3\xa9");
}

TEST(Wire, ErrnoToErrorNames) {
  EXPECT_STREQ(errorKindName(errorKindOf(invalidArgument("x"))),
               "org.cxiosync1.Error.InvalidArgument");
  EXPECT_STREQ(errorKindName(errorKindOf(noSuchCgroup("x"))), "org.cxiosync1.Error.NoSuchCgroup");
  EXPECT_STREQ(errorKindName(errorKindOf(notSupported("x"))), "org.cxiosync1.Error.NotSupported");
  EXPECT_STREQ(errorKindName(errorKindOf(makeError("x", EACCES))),
               "org.cxiosync1.Error.AccessDenied");
  EXPECT_STREQ(errorKindName(errorKindOf(failed("x"))), "org.cxiosync1.Error.Failed");
  EXPECT_STREQ(errorKindName(errorKindOf(makeError("x", 0))), "org.cxiosync1.Error.Failed");
}

}  // namespace
}  // namespace cxiosync::dbus
