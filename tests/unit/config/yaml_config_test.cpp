// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/yaml_config.h"

#include <gtest/gtest.h>

namespace cxiosync {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kMain = "/etc/cxiosync/cxiosync.yaml";

CgroupPath cg(std::string_view p) {
  return *CgroupPath::parse(p);
}

Result<Config> parse1(const std::string& text) {
  return parseConfig({{kMain, text}});
}

std::string err(const std::string& text) {
  auto r = parse1(text);
  if (r) return "(parsed)";
  return r.error().message;
}

TEST(YamlConfig, EmptyFilesGiveBuiltInGlobals) {
  for (auto text : {"", "# only a comment\n", "\n\n", "---\n"}) {
    auto r = parse1(text);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->global.detector, DetectorKind::Auto);
    EXPECT_EQ(r->global.pollInterval, milliseconds(100));
    EXPECT_FALSE(r->global.watchFsync);
    EXPECT_EQ(r->global.minDirtyBytes, 1u << 20);
    EXPECT_FALSE(r->global.dryRun);
    EXPECT_TRUE(r->global.liftOnShutdown);
    EXPECT_TRUE(r->cgroups.empty());
    EXPECT_EQ(r->globalSources.detector.describe(), "default");
  }
}

TEST(YamlConfig, EveryGlobalKnob) {
  auto r = parse1(
      "detector: procfs\n"
      "poll_interval_ms: 250\n"
      "watch_fsync: yes\n"
      "min_dirty_bytes: 4MiB\n"
      "dry_run: on\n"
      "lift_on_shutdown: false\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->global.detector, DetectorKind::Procfs);
  EXPECT_EQ(r->global.pollInterval, milliseconds(250));
  EXPECT_TRUE(r->global.watchFsync);
  EXPECT_EQ(r->global.minDirtyBytes, 4u << 20);
  EXPECT_TRUE(r->global.dryRun);
  EXPECT_FALSE(r->global.liftOnShutdown);
  EXPECT_EQ(r->globalSources.detector.describe(), std::string(kMain) + ":1");
  EXPECT_EQ(r->globalSources.liftOnShutdown.describe(), std::string(kMain) + ":6");
  EXPECT_EQ(r->globalSources.minDirtyBytes.kind, ValueSource::Kind::Yaml);
}

TEST(YamlConfig, MinDirtyBytesSpellings) {
  for (auto [text, want] : {std::pair{"1M", 1048576u}, std::pair{"1MiB", 1048576u},
                            std::pair{"1048576", 1048576u}, std::pair{"\"1 MB\"", 1000000u}}) {
    auto r = parse1(std::string("min_dirty_bytes: ") + text + "\n");
    ASSERT_TRUE(r) << text << ": " << r.error().message;
    EXPECT_EQ(r->global.minDirtyBytes, want) << text;
  }
}

TEST(YamlConfig, BooleanSpellingsIncludingYamlQuotedAndUppercase) {
  for (auto t : {"1", "yes", "true", "on", "YES", "True", "ON", "\"on\"", "'1'"}) {
    auto r = parse1(std::string("dry_run: ") + t + "\n");
    ASSERT_TRUE(r) << t << ": " << r.error().message;
    EXPECT_TRUE(r->global.dryRun) << t;
  }
  for (auto f : {"0", "no", "false", "off", "NO", "False", "OFF"}) {
    auto r = parse1(std::string("lift_on_shutdown: ") + f + "\n");
    ASSERT_TRUE(r) << f << ": " << r.error().message;
    EXPECT_FALSE(r->global.liftOnShutdown) << f;
  }
}

TEST(YamlConfig, EveryCgroupKnobWithSources) {
  auto r = parse1(
      "cgroups:\n"
      "  /system.slice:\n"
      "    sync_isolation: on\n"
      "    boost: deny\n"
      "    boost_ceiling: 10MiB/s\n"
      "    max_boost_seconds: 45\n"
      "    boost_budget: 20% of 60s\n"
      "  backup.slice/:\n"
      "    boost_ceiling: max\n"
      "    boost_budget: {percent: 10, window_seconds: 300}\n"
      "  \"/\":\n"
      "    boost_ceiling: inherit\n");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->cgroups.size(), 3u);
  const auto& sys = r->cgroups.at(cg("/system.slice"));
  EXPECT_TRUE(sys.syncIsolation->value);
  EXPECT_EQ(sys.syncIsolation->source.describe(), std::string(kMain) + ":3");
  EXPECT_EQ(sys.boost->value, BoostPermission::Deny);
  EXPECT_EQ(sys.boostCeiling->value, (BoostCeiling{BoostCeiling::Kind::Bytes, 10485760}));
  EXPECT_EQ(sys.maxBoost->value, seconds(45));
  EXPECT_EQ(sys.boostBudget->value, (BoostBudget{20, seconds(60)}));
  EXPECT_EQ(sys.boostBudget->source.line, 7);
  const auto& backup = r->cgroups.at(cg("/backup.slice"));
  EXPECT_EQ(backup.boostCeiling->value.kind, BoostCeiling::Kind::Max);
  EXPECT_EQ(backup.boostBudget->value, (BoostBudget{10, seconds(300)}));
  EXPECT_EQ(backup.boostBudget->source.line, 10);
  EXPECT_FALSE(backup.boost);
  EXPECT_EQ(r->cgroups.at(CgroupPath()).boostCeiling->value.kind, BoostCeiling::Kind::Inherit);
}

TEST(YamlConfig, CgroupWithoutKnobsIsIgnoredAndNullCgroupsIsEmpty) {
  auto r = parse1("cgroups:\n  /a.slice:\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->cgroups.empty());
  r = parse1("cgroups:\n");
  ASSERT_TRUE(r) << r.error().message;
  r = parse1("cgroups: {}\n");
  ASSERT_TRUE(r) << r.error().message;
}

// ---- errors: exact file:line:col and key path ----

TEST(YamlConfigErrors, UnknownGlobalKey) {
  EXPECT_EQ(err("detector: auto\npoll_interval: 100\n"),
            "/etc/cxiosync/cxiosync.yaml:2:1: poll_interval: unknown key (expected detector, "
            "poll_interval_ms, watch_fsync, min_dirty_bytes, dry_run, lift_on_shutdown or "
            "cgroups)");
}

TEST(YamlConfigErrors, UnknownCgroupKey) {
  EXPECT_EQ(err("cgroups:\n  /system.slice:\n    isolation: on\n"),
            "/etc/cxiosync/cxiosync.yaml:3:5: cgroups./system.slice.isolation: unknown key "
            "(expected sync_isolation, boost, boost_ceiling, max_boost_seconds, boost_budget, "
            "tenant or tenant_sync)");
}

TEST(YamlConfigErrors, BadValuesPointAtTheValue) {
  EXPECT_EQ(err("cgroups:\n  /system.slice:\n    boost: maybe\n"),
            "/etc/cxiosync/cxiosync.yaml:3:12: cgroups./system.slice.boost: invalid value "
            "'maybe': expected allow or deny");
  EXPECT_EQ(err("dry_run: perhaps\n"),
            "/etc/cxiosync/cxiosync.yaml:1:10: dry_run: invalid value 'perhaps': expected a "
            "boolean (on/off, yes/no, true/false, 1/0)");
  EXPECT_EQ(err("detector: ebpf\n"),
            "/etc/cxiosync/cxiosync.yaml:1:11: detector: invalid value 'ebpf': expected auto, "
            "tracefs or procfs");
  EXPECT_EQ(err("cgroups:\n  /a:\n    boost_ceiling: fast\n"),
            "/etc/cxiosync/cxiosync.yaml:3:20: cgroups./a.boost_ceiling: invalid value 'fast': "
            "expected inherit, max or a rate in bytes/s such as 10M or 10MiB/s");
}

TEST(YamlConfigErrors, OutOfRange) {
  EXPECT_EQ(err("poll_interval_ms: 1\n"),
            "/etc/cxiosync/cxiosync.yaml:1:19: poll_interval_ms: poll interval '1' is out of "
            "range (10ms..60000ms)");
  EXPECT_EQ(err("min_dirty_bytes: 2T\n"),
            "/etc/cxiosync/cxiosync.yaml:1:18: min_dirty_bytes: size '2T' is out of range "
            "(0..1TiB)");
  EXPECT_EQ(err("cgroups:\n  /a:\n    max_boost_seconds: 0\n"),
            "/etc/cxiosync/cxiosync.yaml:3:24: cgroups./a.max_boost_seconds: max boost duration "
            "'0' is out of range (1s..86400s)");
  EXPECT_EQ(err("cgroups:\n  /a:\n    boost_budget: 150% of 60s\n"),
            "/etc/cxiosync/cxiosync.yaml:3:19: cgroups./a.boost_budget: budget percentage "
            "'150%' is out of range (1..100; use boost: deny to never boost)");
  EXPECT_EQ(err("cgroups:\n  /a:\n    boost_budget: {percent: 0, window_seconds: 60}\n"),
            "/etc/cxiosync/cxiosync.yaml:3:29: cgroups./a.boost_budget.percent: budget "
            "percentage '0' is out of range (1..100; use boost: deny to never boost)");
  EXPECT_EQ(err("cgroups:\n  /a:\n    boost_budget: {percent: 5, window_seconds: 0}\n"),
            "/etc/cxiosync/cxiosync.yaml:3:48: cgroups./a.boost_budget.window_seconds: budget "
            "window '0' is out of range (1s..86400s)");
}

TEST(YamlConfigErrors, WrongTypes) {
  EXPECT_EQ(err("dry_run: [yes]\n"),
            "/etc/cxiosync/cxiosync.yaml:1:10: dry_run: expected a single value, found a list");
  EXPECT_EQ(err("detector:\n  kind: auto\n"),
            "/etc/cxiosync/cxiosync.yaml:2:3: detector: expected a single value, found a mapping");
  EXPECT_EQ(err("dry_run:\n"), "/etc/cxiosync/cxiosync.yaml:1:1: dry_run: missing value");
  EXPECT_EQ(err("cgroups: [a, b]\n"),
            "/etc/cxiosync/cxiosync.yaml:1:10: cgroups: expected a mapping from cgroup path to "
            "policy, found a list");
  EXPECT_EQ(err("cgroups:\n  /a: on\n"),
            "/etc/cxiosync/cxiosync.yaml:2:7: cgroups./a: expected a mapping of policy knobs, "
            "found a scalar");
  EXPECT_EQ(err("- detector\n"),
            "/etc/cxiosync/cxiosync.yaml:1:1: expected a mapping of settings, found a list");
  EXPECT_EQ(err("just text\n"),
            "/etc/cxiosync/cxiosync.yaml:1:1: expected a mapping of settings, found a scalar");
  EXPECT_EQ(err("cgroups:\n  /a:\n    boost_budget: {percent: 5}\n"),
            "/etc/cxiosync/cxiosync.yaml:3:19: cgroups./a.boost_budget: missing window_seconds "
            "(write e.g. {percent: 25, window_seconds: 120} or \"25% of 120s\")");
  EXPECT_EQ(err("cgroups:\n  /a:\n    boost_budget: {percent: 5, window: 60}\n"),
            "/etc/cxiosync/cxiosync.yaml:3:32: cgroups./a.boost_budget.window: unknown key "
            "(expected percent or window_seconds)");
  EXPECT_EQ(err("? [a, b]\n: 1\n"),
            "/etc/cxiosync/cxiosync.yaml:1:3: keys must be plain names, found a list");
}

TEST(YamlConfigErrors, DuplicateKeys) {
  EXPECT_EQ(err("dry_run: yes\ndry_run: no\n"),
            "/etc/cxiosync/cxiosync.yaml:2:1: dry_run: duplicate key");
  EXPECT_EQ(err("cgroups:\n  /a:\n    boost: allow\n    boost: deny\n"),
            "/etc/cxiosync/cxiosync.yaml:4:5: cgroups./a.boost: duplicate key");
  EXPECT_EQ(err("cgroups:\n  /a.slice:\n    boost: allow\n  a.slice/:\n    boost: deny\n"),
            "/etc/cxiosync/cxiosync.yaml:4:3: cgroups.a.slice/: same cgroup as /a.slice at "
            "line 2");
}

TEST(YamlConfigErrors, BadCgroupPaths) {
  EXPECT_EQ(err("cgroups:\n  /a/../b:\n    boost: deny\n"),
            "/etc/cxiosync/cxiosync.yaml:2:3: cgroups./a/../b: cgroup path '/a/../b': component "
            "'..' is not allowed");
  EXPECT_EQ(err("cgroups:\n  ./a:\n    boost: deny\n"),
            "/etc/cxiosync/cxiosync.yaml:2:3: cgroups../a: cgroup path './a': component '.' is "
            "not allowed");
  EXPECT_EQ(err("cgroups:\n  \"/a\\tb\":\n    boost: deny\n"),
            "/etc/cxiosync/cxiosync.yaml:2:3: cgroups./a\tb: cgroup path '/a\\x09b': contains a "
            "control character");
}

TEST(YamlConfigErrors, MountPointSpelledOut) {
  EXPECT_EQ(err("cgroups:\n  /sys/fs/cgroup/system.slice:\n    boost: deny\n"),
            "/etc/cxiosync/cxiosync.yaml:2:3: cgroups./sys/fs/cgroup/system.slice: cgroup paths "
            "are relative to the cgroup2 mount: write /system.slice");
  EXPECT_EQ(err("cgroups:\n  /sys/fs/cgroup:\n    boost: deny\n"),
            "/etc/cxiosync/cxiosync.yaml:2:3: cgroups./sys/fs/cgroup: cgroup paths are relative "
            "to the cgroup2 mount: write /");
}

TEST(YamlConfigErrors, SyntaxErrorsAndMultipleDocuments) {
  auto e = err("detector: auto\n  bad indent: [\n");
  EXPECT_EQ(e.rfind("/etc/cxiosync/cxiosync.yaml:2:", 0), 0u) << e;
  e = err("cgroups: {a: 1\n");
  EXPECT_EQ(e.rfind("/etc/cxiosync/cxiosync.yaml:", 0), 0u) << e;
  EXPECT_EQ(err("dry_run: yes\n---\ndry_run: no\n"),
            "/etc/cxiosync/cxiosync.yaml:3:1: more than one YAML document (remove the '---')");
}

TEST(YamlConfigErrors, HostileInputNeverCrashes) {
  for (std::string text :
       {std::string("\0\0\0", 3), std::string(100000, '['), std::string("{{{{{{{{"),
        std::string("cgroups:\n  ") + std::string(5000, 'a') + ":\n    boost: deny\n",
        std::string("&a [*a]"), std::string("\xff\xfe garbage"),
        std::string("key: \"unterminated")}) {
    auto r = parse1(text);
    if (!r) {
      EXPECT_EQ(r.error().message.rfind(kMain, 0), 0u) << r.error().message;
    }
  }
}

// ---- merge across files ----

TEST(YamlMerge, LaterFilesOverrideKnobByKnobInGivenOrder) {
  auto r = parseConfig({
      {"/etc/cxiosync/cxiosync.yaml",
       "poll_interval_ms: 100\ndry_run: yes\ncgroups:\n  /a:\n    boost: allow\n"
       "    max_boost_seconds: 10\n"},
      {"/etc/cxiosync/cxiosync.d/10-a.yaml",
       "poll_interval_ms: 200\ncgroups:\n  /a:\n"
       "    boost: deny\n"},
      {"/etc/cxiosync/cxiosync.d/20-b.yaml", "poll_interval_ms: 300\n"},
  });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->global.pollInterval, milliseconds(300));
  EXPECT_EQ(r->globalSources.pollInterval.describe(), "/etc/cxiosync/cxiosync.d/20-b.yaml:1");
  EXPECT_TRUE(r->global.dryRun);  // kept from the main file
  EXPECT_EQ(r->globalSources.dryRun.describe(), "/etc/cxiosync/cxiosync.yaml:2");
  const auto& a = r->cgroups.at(cg("/a"));
  EXPECT_EQ(a.boost->value, BoostPermission::Deny);
  EXPECT_EQ(a.boost->source.describe(), "/etc/cxiosync/cxiosync.d/10-a.yaml:4");
  EXPECT_EQ(a.maxBoost->value, seconds(10));
  EXPECT_EQ(a.maxBoost->source.describe(), "/etc/cxiosync/cxiosync.yaml:6");
  EXPECT_EQ(r->files.size(), 3u);
}

TEST(YamlMerge, NeverHalfApplied) {
  std::vector<ConfigText> files = {
      {"/etc/cxiosync/cxiosync.yaml", "dry_run: yes\n"},
      {"/etc/cxiosync/cxiosync.d/10-ok.yaml", "poll_interval_ms: 500\n"},
      {"/etc/cxiosync/cxiosync.d/20-bad.yaml", "poll_interval_ms: 200\nwatch_fsync: sometimes\n"},
      {"/etc/cxiosync/cxiosync.d/30-ok.yaml", "detector: procfs\n"},
  };
  auto r = parseConfig(files);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "/etc/cxiosync/cxiosync.d/20-bad.yaml:2:14: watch_fsync: invalid value 'sometimes': "
            "expected a boolean (on/off, yes/no, true/false, 1/0)");
  EXPECT_FALSE(checkConfig(files));
  files.erase(files.begin() + 2);
  EXPECT_TRUE(checkConfig(files));
}

TEST(YamlMerge, FirstErrorWins) {
  auto r = parseConfig({{"a.yaml", "bogus: 1\n"}, {"b.yaml", "also: 2\n"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("a.yaml:1:1: bogus:", 0), 0u);
}

}  // namespace
}  // namespace cxiosync
