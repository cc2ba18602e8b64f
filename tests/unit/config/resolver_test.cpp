// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/resolver.h"

#include <gtest/gtest.h>

#include <chrono>

#include "policy/config/defaults.h"
#include "policy/config/dropin.h"
#include "policy/config/values.h"
#include "policy/config/yaml_config.h"

namespace cxiosync {
namespace {

using std::chrono::seconds;

CgroupPath cg(std::string_view p) {
  return *CgroupPath::parse(p);
}

PolicySettings knob(std::string_view name, std::string_view value, ValueSource src) {
  PolicySettings s;
  auto st = setPolicyKnob(s, name, value, src);
  EXPECT_TRUE(st) << st.error().message;
  return s;
}

PolicyLayers withDefaults() {
  PolicyLayers l;
  l.defaults = builtinPolicyDefaults();
  return l;
}

TEST(Defaults, ShippedPolicy) {
  PolicyResolver r;
  auto root = r.resolve(CgroupPath());
  EXPECT_TRUE(root.syncIsolation.value);
  EXPECT_EQ(root.boost.value, BoostPermission::Allow);
  EXPECT_EQ(root.boostCeiling.value.kind, BoostCeiling::Kind::Inherit);
  EXPECT_EQ(root.maxBoost.value, seconds(30));
  EXPECT_EQ(root.boostBudget.value, (BoostBudget{25, seconds(120)}));
  for (auto on : {"/init.scope", "/system.slice", "/system.slice/cron.service"}) {
    EXPECT_TRUE(r.resolve(cg(on)).syncIsolation.value) << on;
  }
  for (auto off : {"/user.slice", "/user.slice/user-1000.slice/session-2.scope", "/machine.slice",
                   "/machine.slice/machine-vm.scope"}) {
    EXPECT_FALSE(r.resolve(cg(off)).syncIsolation.value) << off;
  }
  // Tenants keep boost allow: their limits may be lifted for a foreign (system) sync.
  EXPECT_EQ(r.resolve(cg("/user.slice")).boost.value, BoostPermission::Allow);
  // Other top-level cgroups inherit from the root.
  EXPECT_TRUE(r.resolve(cg("/backup.slice")).syncIsolation.value);
  auto p = r.resolve(cg("/user.slice/x"));
  for (const ValueSource* s : {&p.syncIsolation.source, &p.boost.source, &p.boostCeiling.source,
                               &p.maxBoost.source, &p.boostBudget.source}) {
    EXPECT_EQ(s->describe(), "default");
  }
}

TEST(Resolve, LayersWithinOneCgroupRuntimeBeatsDropInBeatsYaml) {
  auto l = withDefaults();
  l.yaml[cg("/a")] = knob("boost", "deny", ValueSource::yaml("c.yaml", 3));
  l.dropIn[cg("/a")] = knob("boost", "allow", ValueSource::dropIn("a.conf", 2));
  PolicyResolver r1(l);
  EXPECT_EQ(r1.resolve(cg("/a")).boost.value, BoostPermission::Allow);
  EXPECT_EQ(r1.resolve(cg("/a")).boost.source.describe(), "a.conf:2");
  l.runtime[cg("/a")] = knob("boost", "deny", ValueSource::runtime());
  PolicyResolver r2(l);
  EXPECT_EQ(r2.resolve(cg("/a")).boost.value, BoostPermission::Deny);
  EXPECT_EQ(r2.resolve(cg("/a")).boost.source.describe(), "runtime");
  EXPECT_EQ(r2.resolve(cg("/a/b/c")).boost.source.describe(), "runtime");
}

TEST(Resolve, YamlOverridesDefaultOnSameCgroup) {
  auto l = withDefaults();
  l.yaml[cg("/user.slice")] = knob("sync_isolation", "on", ValueSource::yaml("c.yaml", 9));
  PolicyResolver r(l);
  auto p = r.resolve(cg("/user.slice/user-1000.slice"));
  EXPECT_TRUE(p.syncIsolation.value);
  EXPECT_EQ(p.syncIsolation.source.describe(), "c.yaml:9");
}

TEST(Resolve, MostSpecificCgroupWinsOverHigherLayerOnAncestor) {
  auto l = withDefaults();
  l.yaml[cg("/a/b")] = knob("max_boost_seconds", "5", ValueSource::yaml("c.yaml", 4));
  l.dropIn[cg("/a")] = knob("max_boost_seconds", "50", ValueSource::dropIn("a.conf", 2));
  l.runtime[cg("/")] = knob("max_boost_seconds", "500", ValueSource::runtime());
  PolicyResolver r(l);
  EXPECT_EQ(r.resolve(cg("/a/b/c")).maxBoost.value, seconds(5));
  EXPECT_EQ(r.resolve(cg("/a/b/c")).maxBoost.source.describe(), "c.yaml:4");
  EXPECT_EQ(r.resolve(cg("/a/x")).maxBoost.value, seconds(50));
  EXPECT_EQ(r.resolve(cg("/z")).maxBoost.value, seconds(500));
  EXPECT_EQ(r.resolve(cg("/")).maxBoost.source.describe(), "runtime");
}

TEST(Resolve, BuiltInDefaultOnChildBeatsConfigOnRoot) {
  // The shipped per-slice defaults are values stated for those cgroups: turning isolation off at
  // the root does not turn it off for system.slice; say so for system.slice too.
  auto l = withDefaults();
  l.yaml[CgroupPath()] = knob("sync_isolation", "off", ValueSource::yaml("c.yaml", 2));
  PolicyResolver r(l);
  EXPECT_FALSE(r.resolve(cg("/backup.slice")).syncIsolation.value);
  EXPECT_TRUE(r.resolve(cg("/system.slice")).syncIsolation.value);
  EXPECT_EQ(r.resolve(cg("/system.slice")).syncIsolation.source.describe(), "default");
}

TEST(Resolve, EachKnobInheritsIndependently) {
  auto l = withDefaults();
  l.yaml[cg("/a")] = knob("boost", "deny", ValueSource::yaml("c.yaml", 1));
  l.yaml[cg("/a/b")] = knob("boost_ceiling", "10M", ValueSource::yaml("c.yaml", 2));
  l.dropIn[cg("/a/b/c")] = knob("boost_budget", "5% of 1min", ValueSource::dropIn("x.conf", 3));
  PolicyResolver r(l);
  auto p = r.resolve(cg("/a/b/c/d"));
  EXPECT_EQ(p.boost.value, BoostPermission::Deny);
  EXPECT_EQ(p.boost.source.describe(), "c.yaml:1");
  EXPECT_EQ(p.boostCeiling.value.bytesPerSecond, 10000000u);
  EXPECT_EQ(p.boostCeiling.source.describe(), "c.yaml:2");
  EXPECT_EQ(p.boostBudget.value, (BoostBudget{5, seconds(60)}));
  EXPECT_EQ(p.boostBudget.source.describe(), "x.conf:3");
  EXPECT_EQ(p.maxBoost.value, seconds(30));
  EXPECT_EQ(p.maxBoost.source.describe(), "default");
  EXPECT_EQ(p.syncIsolation.source.describe(), "default");
}

TEST(Resolve, SiblingPrefixIsNotAnAncestor) {
  auto l = withDefaults();
  l.yaml[cg("/a")] = knob("boost", "deny", ValueSource::yaml("c.yaml", 1));
  PolicyResolver r(l);
  EXPECT_EQ(r.resolve(cg("/ab")).boost.value, BoostPermission::Allow);
  EXPECT_EQ(r.resolve(cg("/a")).boost.value, BoostPermission::Deny);
}

TEST(Resolve, MissingDefaultsLayerStillYieldsShippedRootValues) {
  PolicyLayers l;  // no defaults at all
  l.yaml[cg("/a")] = knob("boost", "deny", ValueSource::yaml("c.yaml", 1));
  PolicyResolver r(l);
  auto p = r.resolve(cg("/q"));
  EXPECT_TRUE(p.syncIsolation.value);
  EXPECT_EQ(p.maxBoost.value, seconds(30));
  EXPECT_EQ(p.boostBudget.value, (BoostBudget{25, seconds(120)}));
}

TEST(Resolve, ExplicitSettingsAndTable) {
  auto l = withDefaults();
  l.runtime[cg("/a")] = knob("boost", "deny", ValueSource::runtime());
  PolicyResolver r(l);
  EXPECT_TRUE(r.explicitSettings(cg("/a")).boost);
  EXPECT_FALSE(r.explicitSettings(cg("/a")).syncIsolation);
  EXPECT_TRUE(r.explicitSettings(cg("/a/b")).empty());
  EXPECT_TRUE(r.table().count("a"));
  EXPECT_TRUE(r.table().count("system.slice"));
}

TEST(Resolve, EndToEndFromYamlAndDropIns) {
  auto config =
      parseConfig({{"/etc/cxiosync/cxiosync.yaml",
                    "cgroups:\n  /backup.slice:\n    boost: deny\n    max_boost_seconds: 9\n"}});
  ASSERT_TRUE(config) << config.error().message;
  auto dropIn = parseDropIns(
      {{"/etc/systemd/system/backup.slice.d/70-cxiosync.conf", "[X-CxIOSync]\nBoost=allow\n"}});
  ASSERT_TRUE(dropIn) << dropIn.error().message;
  PolicyLayers l = withDefaults();
  l.yaml = config->cgroups;
  l.dropIn[*sliceUnitToCgroupPath("backup.slice")] = *dropIn;
  PolicyResolver r(l);
  auto p = r.resolve(cg("/backup.slice/job.service"));
  EXPECT_EQ(p.boost.value, BoostPermission::Allow);
  EXPECT_EQ(p.boost.source.describe(), "/etc/systemd/system/backup.slice.d/70-cxiosync.conf:2");
  EXPECT_EQ(p.maxBoost.value, seconds(9));
  EXPECT_EQ(p.maxBoost.source.describe(), "/etc/cxiosync/cxiosync.yaml:4");
}

TEST(Describe, PolicyAndGlobalsForShow) {
  auto l = withDefaults();
  l.yaml[cg("/a")] = knob("boost_ceiling", "10M", ValueSource::yaml("c.yaml", 7));
  PolicyResolver r(l);
  auto v = describePolicy(r.resolve(cg("/a/b")));
  ASSERT_EQ(v.size(), 7u);  // + tenant, tenant_sync
  EXPECT_EQ(v[0].name, "sync_isolation");
  EXPECT_EQ(v[0].value, "on");
  EXPECT_EQ(v[0].source, "default");
  EXPECT_EQ(v[2].name, "boost_ceiling");
  EXPECT_EQ(v[2].value, "10000000");
  EXPECT_EQ(v[2].source, "c.yaml:7");
  EXPECT_EQ(v[4].value, "25% of 120s");
  auto config = parseConfig({{"x.yaml", "\n\nmin_dirty_bytes: 2M\n"}});
  ASSERT_TRUE(config);
  auto g = describeGlobals(config->global, config->globalSources);
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(g[3].name, "min_dirty_bytes");
  EXPECT_EQ(g[3].value, "2097152");
  EXPECT_EQ(g[3].source, "x.yaml:3");
  EXPECT_EQ(g[0].value, "auto");
  EXPECT_EQ(g[0].source, "default");
  EXPECT_EQ(g[1].value, "100");
}

TEST(PolicyCacheTest, MemoizesAndMatchesResolve) {
  auto l = withDefaults();
  l.yaml[cg("/a")] = knob("boost", "deny", ValueSource::yaml("c.yaml", 1));
  PolicyResolver r(l);
  PolicyCache cache(r);
  const auto& p1 = cache.get(cg("/a/b"));
  const auto& p2 = cache.get(cg("/a/b"));
  EXPECT_EQ(&p1, &p2);
  EXPECT_EQ(p1.boost.value, BoostPermission::Deny);
  cache.clear();
  EXPECT_EQ(cache.get(cg("/x")).boost.value, BoostPermission::Allow);
}

TEST(Resolve, TenThousandCgroupsStayCheap) {
  // Not a timed assertion (benchmarks live in tests/bench); this pins correctness at scale and
  // prints the cost for a human.
  auto l = withDefaults();
  std::vector<CgroupPath> paths;
  for (int s = 0; s < 100; ++s) {
    std::string slice = "/tenant" + std::to_string(s) + ".slice";
    if (s % 10 == 0) l.yaml[cg(slice)] = knob("boost", "deny", ValueSource::yaml("c.yaml", s + 1));
    for (int u = 0; u < 100; ++u)
      paths.push_back(cg(slice + "/u" + std::to_string(u) + ".service"));
  }
  PolicyResolver r(l);
  auto t0 = std::chrono::steady_clock::now();
  size_t denied = 0;
  for (const auto& p : paths) denied += r.resolve(p).boost.value == BoostPermission::Deny;
  auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_EQ(denied, 1000u);
  std::printf("resolve() x %zu cgroups: %lld us\n", paths.size(), static_cast<long long>(us));
}

}  // namespace
}  // namespace cxiosync
