// SPDX-License-Identifier: GPL-2.0-or-later
// The shipped packaging/cxiosync.yaml must parse, and with every commented-out default enabled
// it must state exactly the built-in defaults (so the file never drifts from the code).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "policy/config/defaults.h"
#include "policy/config/resolver.h"
#include "policy/config/yaml_config.h"

namespace cxiosync {
namespace {

const std::string kExample = std::string(CXIOSYNC_FIXTURES_DIR) + "/../../packaging/cxiosync.yaml";

std::string readExample() {
  std::ifstream in(kExample);
  EXPECT_TRUE(in.good()) << kExample;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "#key: v" and "#  nested: v" are commented-out settings; "# prose" and "#" are comments.
std::string uncommentDefaults(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  int uncommented = 0;
  while (std::getline(in, line)) {
    if (line.size() > 1 && line[0] == '#' &&
        (line[1] != ' ' || (line.size() > 2 && line[2] == ' '))) {
      line.erase(0, 1);
      ++uncommented;
    }
    out += line + "\n";
  }
  EXPECT_GT(uncommented, 10);
  return out;
}

TEST(ExampleConfig, ParsesAsShippedAndChangesNothing) {
  auto config = parseConfig({{kExample, readExample()}});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_TRUE(config->cgroups.empty());
  EXPECT_EQ(config->globalSources.detector.describe(), "default");
}

TEST(ExampleConfig, UncommentedDefaultsEqualTheBuiltInDefaults) {
  auto config = parseConfig({{kExample, uncommentDefaults(readExample())}});
  ASSERT_TRUE(config) << config.error().message;
  const GlobalSettings& g = config->global;
  const GlobalSettings b = builtinGlobalSettings();
  EXPECT_EQ(g.detector, b.detector);
  EXPECT_EQ(g.pollInterval, b.pollInterval);
  EXPECT_EQ(g.watchFsync, b.watchFsync);
  EXPECT_EQ(g.minDirtyBytes, b.minDirtyBytes);
  EXPECT_EQ(g.dryRun, b.dryRun);
  EXPECT_EQ(g.liftOnShutdown, b.liftOnShutdown);
  // Every global was stated in the file.
  for (const ValueSource* s :
       {&config->globalSources.detector, &config->globalSources.pollInterval,
        &config->globalSources.watchFsync, &config->globalSources.minDirtyBytes,
        &config->globalSources.dryRun, &config->globalSources.liftOnShutdown}) {
    EXPECT_EQ(s->kind, ValueSource::Kind::Yaml);
  }

  // The same cgroups and knobs as builtinPolicyDefaults(), with the same values.
  const auto builtin = builtinPolicyDefaults();
  ASSERT_EQ(config->cgroups.size(), builtin.size());
  for (const auto& [path, want] : builtin) {
    auto it = config->cgroups.find(path);
    ASSERT_NE(it, config->cgroups.end()) << path.display();
    const PolicySettings& got = it->second;
    EXPECT_EQ(got.syncIsolation.has_value(), want.syncIsolation.has_value()) << path.display();
    EXPECT_EQ(got.boost.has_value(), want.boost.has_value()) << path.display();
    EXPECT_EQ(got.boostCeiling.has_value(), want.boostCeiling.has_value()) << path.display();
    EXPECT_EQ(got.maxBoost.has_value(), want.maxBoost.has_value()) << path.display();
    EXPECT_EQ(got.boostBudget.has_value(), want.boostBudget.has_value()) << path.display();
    if (want.syncIsolation) {
      EXPECT_EQ(got.syncIsolation->value, want.syncIsolation->value);
    }
    if (want.boost) {
      EXPECT_EQ(got.boost->value, want.boost->value);
    }
    if (want.boostCeiling) {
      EXPECT_EQ(got.boostCeiling->value, want.boostCeiling->value);
    }
    if (want.maxBoost) {
      EXPECT_EQ(got.maxBoost->value, want.maxBoost->value);
    }
    if (want.boostBudget) {
      EXPECT_EQ(got.boostBudget->value, want.boostBudget->value);
    }
  }
}

}  // namespace
}  // namespace cxiosync
