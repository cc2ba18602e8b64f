// SPDX-License-Identifier: GPL-2.0-or-later
// Tenants in the configuration (issue 15): `tenant:` / `tenant_sync:` in YAML, Tenant= /
// TenantSync= in drop-ins and the runtime layer, the built-in user@UID.service rule, and how
// the resolver finds a cgroup's tenant.
#include <gtest/gtest.h>

#include "policy/config/defaults.h"
#include "policy/config/dropin.h"
#include "policy/config/resolver.h"
#include "policy/config/values.h"
#include "policy/config/yaml_config.h"

namespace cxiosync {
namespace {

CgroupPath cg(std::string_view p) {
  return *CgroupPath::parse(p);
}

constexpr std::string_view kUser = "/user.slice/user-1000.slice/user@1000.service";

TEST(TenantConfig, YamlKeys) {
  auto f = parseConfigText({"/etc/cxiosync/cxiosync.yaml",
                            "cgroups:\n  /machine.slice/box.scope:\n    tenant: true\n"
                            "    tenant_sync: foreign\n"});
  ASSERT_TRUE(f) << f.error().message;
  const PolicySettings& s = f->cgroups.at(cg("/machine.slice/box.scope"));
  ASSERT_TRUE(s.tenant);
  EXPECT_TRUE(s.tenant->value);
  EXPECT_EQ(s.tenant->source.describe(), "/etc/cxiosync/cxiosync.yaml:3");
  ASSERT_TRUE(s.tenantSync);
  EXPECT_EQ(s.tenantSync->value, TenantSync::Foreign);
}

TEST(TenantConfig, YamlBadValues) {
  auto f = parseConfigText({"c.yaml", "cgroups:\n  /a:\n    tenant_sync: mine\n"});
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().message,
            "c.yaml:3:18: cgroups./a.tenant_sync: invalid value 'mine': expected self or foreign");
  auto g = parseConfigText({"c.yaml", "cgroups:\n  /a:\n    tenant: perhaps\n"});
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("cgroups./a.tenant: "), std::string::npos) << g.error().message;
}

TEST(TenantConfig, DropInKeys) {
  auto r = parseDropIns({{"/etc/systemd/system/box.service.d/70-cxiosync.conf",
                          "[Service]\nDelegate=yes\n[X-CxIOSync]\nTenant=yes\nTenantSync=self\n"}});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->tenant);
  EXPECT_TRUE(r->tenant->value);
  EXPECT_EQ(r->tenant->source.describe(), "/etc/systemd/system/box.service.d/70-cxiosync.conf:4");
  ASSERT_TRUE(r->tenantSync);
  EXPECT_EQ(r->tenantSync->value, TenantSync::Self);
  EXPECT_EQ(dropInKeyName(DropInKey::Tenant), "Tenant");
  EXPECT_EQ(dropInKeyName(DropInKey::TenantSync), "TenantSync");
}

TEST(TenantConfig, DropInResetAndErrors) {
  auto r = parseDropIns({{"/etc/systemd/system/a.service.d/10.conf", "[X-CxIOSync]\nTenant=yes\n"},
                         {"/etc/systemd/system/a.service.d/20.conf", "[X-CxIOSync]\nTenant=\n"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->tenant);
  auto bad = parseDropIns({{"/x.conf", "[X-CxIOSync]\nTenantSync=other\n"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "/x.conf:2: [X-CxIOSync] TenantSync: invalid value 'other': expected self or foreign");
}

TEST(TenantConfig, RuntimeKnobsRoundTrip) {
  PolicySettings s;
  ASSERT_TRUE(setPolicyKnob(s, kKnobTenant, "on", ValueSource::runtime()));
  ASSERT_TRUE(setPolicyKnob(s, kKnobTenantSync, "Foreign", ValueSource::runtime()));
  EXPECT_TRUE(s.tenant->value);
  EXPECT_EQ(formatTenantSync(s.tenantSync->value), "foreign");
  EXPECT_EQ(parseTenantSync(formatTenantSync(TenantSync::Self)).value(), TenantSync::Self);
  EXPECT_FALSE(setPolicyKnob(s, kKnobTenant, "maybe", ValueSource::runtime()));
  EXPECT_TRUE(s.tenant->value);
}

TEST(TenantConfig, BuiltinUserManagerRule) {
  EXPECT_TRUE(isBuiltinTenant(cg(kUser)));
  EXPECT_TRUE(isBuiltinTenant(cg("/user.slice/user-0.slice/user@0.service")));
  EXPECT_FALSE(isBuiltinTenant(cg("/user.slice/user-1000.slice/user@1001.service")));
  EXPECT_FALSE(isBuiltinTenant(cg("/user.slice/user-1000.slice/session-3.scope")));
  // user-UID.slice (session scopes, su/sudo from them) is a tenant of its own (issue 25).
  EXPECT_TRUE(isBuiltinTenant(cg("/user.slice/user-1000.slice")));
  EXPECT_FALSE(isBuiltinTenant(cg("/user.slice/user-99999999999.slice")));
  EXPECT_FALSE(isBuiltinTenant(cg("/user.slice/user-1000.slicex")));
  EXPECT_FALSE(isBuiltinTenant(cg(std::string(kUser) + "/app.slice")));
  EXPECT_FALSE(isBuiltinTenant(cg("/user.slice/user-x.slice/user@x.service")));
  EXPECT_FALSE(isBuiltinTenant(cg("/system.slice/user-1000.slice/user@1000.service")));
}

TEST(TenantConfig, BuiltinTenantOwnerComesFromTheName) {
  EXPECT_EQ(builtinTenantOwner(cg(kUser)), 1000u);
  EXPECT_EQ(builtinTenantOwner(cg("/user.slice/user-1000.slice")), 1000u);
  EXPECT_EQ(builtinTenantOwner(cg("/user.slice/user-0.slice")), 0u);
  EXPECT_EQ(builtinTenantOwner(cg("/user.slice/user-1000.slice/session-3.scope")), std::nullopt);
  EXPECT_EQ(builtinTenantOwner(cg("/user.slice/user-1000.slice/user@1001.service")), std::nullopt);
  EXPECT_EQ(builtinTenantOwner(cg("/user.slice/user-4294967296.slice")), std::nullopt);
  EXPECT_EQ(builtinTenantOwner(cg("/machine.slice/user-1000.slice")), std::nullopt);
}

TEST(TenantConfig, RootSyncsBelowUserSliceAreIsolatedByDefault) {
  EXPECT_TRUE(rootSyncIsolatedByDefault(cg("/user.slice/user-0.slice/session-1.scope")));
  EXPECT_TRUE(rootSyncIsolatedByDefault(cg("/user.slice")));
  EXPECT_FALSE(rootSyncIsolatedByDefault(cg("/user.slicex/a")));
  EXPECT_FALSE(rootSyncIsolatedByDefault(cg("/machine.slice/ctr.scope")));
  EXPECT_FALSE(rootSyncIsolatedByDefault(cg("/")));
}

TEST(TenantConfig, ResolverFindsTheNearestTenant) {
  PolicyLayers l;
  l.defaults = builtinPolicyDefaults();
  PolicySettings box;
  box.tenant = Sourced<bool>{true, ValueSource::yaml("c.yaml", 3)};
  l.yaml[cg("/machine.slice/box.scope")] = box;
  PolicySettings nested;
  nested.tenant = Sourced<bool>{true, ValueSource::runtime()};
  nested.tenantSync = Sourced<TenantSync>{TenantSync::Foreign, ValueSource::runtime()};
  l.runtime[cg(std::string(kUser) + "/app.slice/podman.scope")] = nested;
  PolicyResolver r(l);

  const std::string app = std::string(kUser) + "/app.slice/cron.service";
  auto p = r.resolve(cg(app));
  ASSERT_TRUE(p.tenantRoot);
  EXPECT_EQ(*p.tenantRoot, cg(kUser));
  EXPECT_FALSE(p.tenant.value);  // not inherited: only the boundary itself says on
  EXPECT_EQ(p.tenantSync.value, TenantSync::Self);
  EXPECT_EQ(p.tenantSync.source.describe(), "default");

  auto u = r.resolve(cg(kUser));
  EXPECT_TRUE(u.tenant.value);
  EXPECT_EQ(u.tenant.source.describe(), "default");

  auto pod = r.resolve(cg(std::string(kUser) + "/app.slice/podman.scope/c1"));
  EXPECT_EQ(*pod.tenantRoot, cg(std::string(kUser) + "/app.slice/podman.scope"));
  EXPECT_EQ(pod.tenantSync.value, TenantSync::Foreign);

  EXPECT_EQ(*r.resolve(cg("/machine.slice/box.scope/payload")).tenantRoot,
            cg("/machine.slice/box.scope"));
  EXPECT_FALSE(r.resolve(cg("/system.slice/cron.service")).tenantRoot);
  // A session scope belongs to the user's slice, a tenant of its own (issue 25).
  EXPECT_EQ(*r.resolve(cg("/user.slice/user-1000.slice/session-2.scope")).tenantRoot,
            cg("/user.slice/user-1000.slice"));
  EXPECT_FALSE(r.resolve(cg("/user.slice/session-2.scope")).tenantRoot);
}

TEST(TenantConfig, TenantOffOverridesTheBuiltinRule) {
  PolicyLayers l;
  l.defaults = builtinPolicyDefaults();
  PolicySettings off;
  off.tenant = Sourced<bool>{false, ValueSource::dropIn("/etc/systemd/user@.service.d/x.conf", 2)};
  l.dropIn[cg(kUser)] = off;
  PolicyResolver r(l);
  auto p = r.resolve(cg(std::string(kUser) + "/app.slice/a.service"));
  ASSERT_TRUE(p.tenantRoot);  // the manager's boundary is gone; the slice's is not
  EXPECT_EQ(*p.tenantRoot, cg("/user.slice/user-1000.slice"));
  auto u = r.resolve(cg(kUser));
  EXPECT_FALSE(u.tenant.value);
  EXPECT_EQ(u.tenant.source.describe(), "/etc/systemd/user@.service.d/x.conf:2");
}

TEST(TenantConfig, DescribePolicyListsTenantKnobs) {
  PolicyResolver r;
  auto v = describePolicy(r.resolve(cg(kUser)));
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v[5].name, "tenant");
  EXPECT_EQ(v[5].value, "on");
  EXPECT_EQ(v[6].name, "tenant_sync");
  EXPECT_EQ(v[6].value, "self");
}

}  // namespace
}  // namespace cxiosync
