// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/model/effective_limit.h"

#include <gtest/gtest.h>

namespace cxiosync {
namespace {

CgroupPath P(std::string_view s) {
  return *CgroupPath::parse(s);
}
constexpr DevNum kVda{254, 0};
constexpr DevNum kSda{8, 0};

IoMaxEntry line(DevNum dev, std::optional<uint64_t> wbps, std::optional<uint64_t> wiops = {},
                std::optional<uint64_t> rbps = {}) {
  IoMaxEntry e;
  e.dev = dev;
  e.limits.wbps = wbps;
  e.limits.wiops = wiops;
  e.limits.rbps = rbps;
  return e;
}

TEST(EffectiveLimit, UnlimitedWithoutLines) {
  IoMaxByCgroup lines;
  auto eff = effectiveWriteLimit(lines, P("/a/b"), kVda);
  EXPECT_FALSE(eff.finite());
  EXPECT_EQ(eff.wbps.value, kUnlimited);
  EXPECT_FALSE(eff.wbps.holder);
}

TEST(EffectiveLimit, OwnLine) {
  IoMaxByCgroup lines{{P("/cg1"), {line(kVda, 1048576)}}};
  auto eff = effectiveWriteLimit(lines, P("/cg1"), kVda);
  EXPECT_TRUE(eff.finite());
  EXPECT_EQ(eff.wbps.value, 1048576u);
  EXPECT_EQ(eff.wbps.holder, P("/cg1"));
  EXPECT_FALSE(eff.wiops.finite());
}

TEST(EffectiveLimit, OtherDeviceDoesNotApply) {
  IoMaxByCgroup lines{{P("/cg1"), {line(kSda, 1048576)}}};
  EXPECT_FALSE(effectiveWriteLimit(lines, P("/cg1"), kVda).finite());
}

TEST(EffectiveLimit, ReadOnlyLimitIsNotAWriteLimit) {
  IoMaxByCgroup lines{{P("/cg1"), {line(kVda, kUnlimited, kUnlimited, 4096)}}};
  EXPECT_FALSE(effectiveWriteLimit(lines, P("/cg1"), kVda).finite());
  EXPECT_TRUE(writeLimitLayers(lines, P("/cg1"), kVda).empty());
}

TEST(EffectiveLimit, AncestorHoldsTighterLimit) {
  IoMaxByCgroup lines{{P("/tenants"), {line(kVda, 1000)}}, {P("/tenants/cg1"), {line(kVda, 5000)}}};
  auto eff = effectiveWriteLimit(lines, P("/tenants/cg1/job"), kVda);
  EXPECT_EQ(eff.wbps.value, 1000u);
  EXPECT_EQ(eff.wbps.holder, P("/tenants"));
}

TEST(EffectiveLimit, PerKeyHoldersMayDiffer) {
  IoMaxByCgroup lines{{P("/a"), {line(kVda, 1000, kUnlimited)}},
                      {P("/a/b"), {line(kVda, 9000, 50)}}};
  auto eff = effectiveWriteLimit(lines, P("/a/b"), kVda);
  EXPECT_EQ(eff.wbps.holder, P("/a"));
  EXPECT_EQ(eff.wiops.value, 50u);
  EXPECT_EQ(eff.wiops.holder, P("/a/b"));
}

TEST(EffectiveLimit, TieGoesToNearestHolder) {
  IoMaxByCgroup lines{{P("/a"), {line(kVda, 1000)}}, {P("/a/b"), {line(kVda, 1000)}}};
  EXPECT_EQ(effectiveWriteLimit(lines, P("/a/b/c"), kVda).wbps.holder, P("/a/b"));
}

TEST(EffectiveLimit, SiblingLimitDoesNotApply) {
  IoMaxByCgroup lines{{P("/a"), {line(kVda, 1000)}}, {P("/ab"), {line(kVda, 10)}}};
  auto eff = effectiveWriteLimit(lines, P("/a/x"), kVda);
  EXPECT_EQ(eff.wbps.value, 1000u);
}

TEST(EffectiveLimit, LayersRootFirst) {
  IoMaxByCgroup lines{{P("/a"), {line(kVda, 1000)}},
                      {P("/a/b"), {line(kVda, kUnlimited, kUnlimited, 5)}},
                      {P("/a/b/c"), {line(kVda, {}, 7)}}};
  auto layers = writeLimitLayers(lines, P("/a/b/c"), kVda);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].cgroup, P("/a"));
  EXPECT_EQ(layers[1].cgroup, P("/a/b/c"));
}

TEST(EffectiveLimit, FullEntryFillsAbsentKeysWithMax) {
  auto full = fullIoMaxEntry(line(kVda, 1000));
  EXPECT_EQ(full.limits.rbps, kUnlimited);
  EXPECT_EQ(full.limits.wbps, 1000u);
  EXPECT_EQ(full.limits.riops, kUnlimited);
  EXPECT_EQ(full.limits.wiops, kUnlimited);
  EXPECT_TRUE(hasFiniteWriteLimit(full.limits));
  EXPECT_FALSE(hasFiniteWriteLimit(IoLimits{}));
}

}  // namespace
}  // namespace cxiosync
