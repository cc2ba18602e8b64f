// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/values.h"

#include <gtest/gtest.h>

namespace cxiosync {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Boolean, AcceptsEverySystemdSpellingCaseInsensitive) {
  for (auto t : {"1", "yes", "YES", "Yes", "y", "true", "True", "t", "on", "ON", " on "}) {
    auto v = parseBoolean(t);
    ASSERT_TRUE(v) << t;
    EXPECT_TRUE(*v) << t;
  }
  for (auto f : {"0", "no", "NO", "n", "false", "FALSE", "f", "off", "Off"}) {
    auto v = parseBoolean(f);
    ASSERT_TRUE(v) << f;
    EXPECT_FALSE(*v) << f;
  }
}

TEST(Boolean, RejectsOthersWithHint) {
  for (auto bad : {"", "2", "enable", "onn", "yess", "-1"}) EXPECT_FALSE(parseBoolean(bad)) << bad;
  EXPECT_EQ(parseBoolean("maybe").error().message,
            "invalid value 'maybe': expected a boolean (on/off, yes/no, true/false, 1/0)");
}

TEST(BoostPermissionValue, AllowDenyAndBooleans) {
  EXPECT_EQ(*parseBoostPermission("allow"), BoostPermission::Allow);
  EXPECT_EQ(*parseBoostPermission("Deny"), BoostPermission::Deny);
  EXPECT_EQ(*parseBoostPermission("yes"), BoostPermission::Allow);
  EXPECT_EQ(*parseBoostPermission("off"), BoostPermission::Deny);
  EXPECT_EQ(parseBoostPermission("maybe").error().message,
            "invalid value 'maybe': expected allow or deny");
}

TEST(Size, PlainAndSuffixes) {
  EXPECT_EQ(*parseSize("1048576"), 1048576u);
  EXPECT_EQ(*parseSize("0"), 0u);
  EXPECT_EQ(*parseSize("1M"), 1048576u);
  EXPECT_EQ(*parseSize("1m"), 1048576u);
  EXPECT_EQ(*parseSize("1MiB"), 1048576u);
  EXPECT_EQ(*parseSize("1 MiB"), 1048576u);
  EXPECT_EQ(*parseSize("1Mi"), 1048576u);
  EXPECT_EQ(*parseSize("1MB"), 1000000u);
  EXPECT_EQ(*parseSize("512K"), 524288u);
  EXPECT_EQ(*parseSize("2G"), 2147483648u);
  EXPECT_EQ(*parseSize("1T"), 1099511627776u);
  EXPECT_EQ(*parseSize("1.5K"), 1536u);
  EXPECT_EQ(*parseSize("4096B"), 4096u);
}

TEST(Size, Rejects) {
  for (auto bad : {"", "M", "-1", "1X", "1MiBs", "1.M", "1 2", "0x10", "1e6"}) {
    EXPECT_FALSE(parseSize(bad)) << bad;
  }
  EXPECT_EQ(parseSize("99999999999999999999").error().message,
            "value '99999999999999999999' is too large");
  EXPECT_EQ(parseSize("20000000T").error().message, "value '20000000T' is too large");
  EXPECT_EQ(parseSize("1X").error().message,
            "invalid value '1X': expected a size in bytes such as 1048576, 1M or 1MiB");
}

TEST(Rate, SiLettersLikeSystemdBandwidthAndIecSuffixes) {
  EXPECT_EQ(*parseRate("10000000"), 10000000u);
  EXPECT_EQ(*parseRate("10M"), 10000000u);
  EXPECT_EQ(*parseRate("10M/s"), 10000000u);
  EXPECT_EQ(*parseRate("10MiB/s"), 10485760u);
  EXPECT_EQ(*parseRate("10 MiB/s"), 10485760u);
  EXPECT_EQ(*parseRate("10MB/s"), 10000000u);
  EXPECT_EQ(*parseRate("1G"), 1000000000u);
  EXPECT_EQ(*parseRate("5K"), 5000u);
  EXPECT_FALSE(parseRate("10M/h"));
  EXPECT_FALSE(parseSize("10M/s"));  // "/s" only for rates
}

TEST(Ceiling, Keywords) {
  EXPECT_EQ(*parseBoostCeiling("inherit"), BoostCeiling{});
  EXPECT_EQ(parseBoostCeiling("max")->kind, BoostCeiling::Kind::Max);
  EXPECT_EQ(parseBoostCeiling("infinity")->kind, BoostCeiling::Kind::Max);
  auto r = parseBoostCeiling("10MiB/s");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, BoostCeiling::Kind::Bytes);
  EXPECT_EQ(r->bytesPerSecond, 10485760u);
  EXPECT_EQ(parseBoostCeiling("0").error().message,
            "boost ceiling must be above 0 bytes/s (use boost: deny)");
  EXPECT_EQ(parseBoostCeiling("fast").error().message,
            "invalid value 'fast': expected inherit, max or a rate in bytes/s such as 10M or "
            "10MiB/s");
}

TEST(Timespan, SystemdStyle) {
  EXPECT_EQ(*parseTimespanMs("30", 1000), 30000);
  EXPECT_EQ(*parseTimespanMs("30s", 1000), 30000);
  EXPECT_EQ(*parseTimespanMs("2min", 1000), 120000);
  EXPECT_EQ(*parseTimespanMs("2m", 1000), 120000);
  EXPECT_EQ(*parseTimespanMs("1min 30s", 1000), 90000);
  EXPECT_EQ(*parseTimespanMs("1min30s", 1000), 90000);
  EXPECT_EQ(*parseTimespanMs("1h", 1000), 3600000);
  EXPECT_EQ(*parseTimespanMs("1d", 1000), 86400000);
  EXPECT_EQ(*parseTimespanMs("250ms", 1000), 250);
  EXPECT_EQ(*parseTimespanMs("1.5s", 1000), 1500);
  EXPECT_EQ(*parseTimespanMs("100", 1), 100);
  for (auto bad : {"", "s", "30 fortnights", "-5", "1M"}) {
    EXPECT_FALSE(parseTimespanMs(bad, 1000)) << bad;
  }
  EXPECT_EQ(parseTimespanMs("99999999999999999999d", 1000).error().message,
            "time span '99999999999999999999d' is too large");
}

TEST(MaxBoost, RangeAndWholeSeconds) {
  EXPECT_EQ(*parseMaxBoost("30"), seconds(30));
  EXPECT_EQ(*parseMaxBoost("2min"), seconds(120));
  EXPECT_EQ(*parseMaxBoost("1"), seconds(1));
  EXPECT_EQ(*parseMaxBoost("1d"), seconds(86400));
  EXPECT_EQ(parseMaxBoost("0").error().message,
            "max boost duration '0' is out of range (1s..86400s)");
  EXPECT_EQ(parseMaxBoost("86401").error().message,
            "max boost duration '86401' is out of range (1s..86400s)");
  EXPECT_EQ(parseMaxBoost("1500ms").error().message,
            "max boost duration '1500ms' is not a whole number of seconds");
}

TEST(Budget, Forms) {
  EXPECT_EQ(*parseBoostBudget("25% of 120s"), (BoostBudget{25, seconds(120)}));
  EXPECT_EQ(*parseBoostBudget("25%/2min"), (BoostBudget{25, seconds(120)}));
  EXPECT_EQ(*parseBoostBudget("25 % per 2min"), (BoostBudget{25, seconds(120)}));
  EXPECT_EQ(*parseBoostBudget("100% OF 60"), (BoostBudget{100, seconds(60)}));
  EXPECT_EQ(*parseBudgetPercent("25"), 25u);
  EXPECT_EQ(*parseBudgetPercent("25%"), 25u);
}

TEST(Budget, Rejects) {
  EXPECT_EQ(parseBoostBudget("25").error().message,
            "invalid value '25': expected '<percent>% of <time span>' such as '25% of 120s'");
  EXPECT_EQ(parseBoostBudget("0% of 60s").error().message,
            "budget percentage '0%' is out of range (1..100; use boost: deny to never boost)");
  EXPECT_EQ(parseBoostBudget("101% of 60s").error().message,
            "budget percentage '101%' is out of range (1..100; use boost: deny to never boost)");
  EXPECT_EQ(parseBoostBudget("20% of 0s").error().message,
            "budget window '0s' is out of range (1s..86400s)");
  EXPECT_FALSE(parseBoostBudget("20% in 60s"));
  EXPECT_FALSE(parseBoostBudget("x% of 60s"));
  EXPECT_FALSE(parseBoostBudget("20% of"));
}

TEST(Globals, DetectorPollMinDirty) {
  EXPECT_EQ(*parseDetector("auto"), DetectorKind::Auto);
  EXPECT_EQ(*parseDetector("TraceFS"), DetectorKind::Tracefs);
  EXPECT_EQ(*parseDetector("procfs"), DetectorKind::Procfs);
  EXPECT_EQ(parseDetector("ebpf").error().message,
            "invalid value 'ebpf': expected auto, tracefs or procfs");
  EXPECT_EQ(*parsePollInterval("100"), milliseconds(100));
  EXPECT_EQ(*parsePollInterval("1s"), milliseconds(1000));
  EXPECT_EQ(parsePollInterval("5").error().message,
            "poll interval '5' is out of range (10ms..60000ms)");
  EXPECT_EQ(parsePollInterval("2min").error().message,
            "poll interval '2min' is out of range (10ms..60000ms)");
  EXPECT_EQ(*parseMinDirtyBytes("0"), 0u);
  EXPECT_EQ(*parseMinDirtyBytes("1T"), uint64_t{1} << 40);
  EXPECT_EQ(parseMinDirtyBytes("2T").error().message, "size '2T' is out of range (0..1TiB)");
}

TEST(Format, RoundTrips) {
  EXPECT_EQ(formatBoolean(true), "on");
  EXPECT_EQ(formatBoolean(false), "off");
  EXPECT_EQ(formatBoostPermission(BoostPermission::Deny), "deny");
  EXPECT_EQ(formatBoostCeiling(BoostCeiling{}), "inherit");
  EXPECT_EQ(formatBoostCeiling({BoostCeiling::Kind::Max, 0}), "max");
  EXPECT_EQ(formatBoostCeiling({BoostCeiling::Kind::Bytes, 10485760}), "10485760");
  EXPECT_EQ(formatSeconds(seconds(30)), "30s");
  EXPECT_EQ(formatBoostBudget({25, seconds(120)}), "25% of 120s");
  EXPECT_EQ(formatDetector(DetectorKind::Procfs), "procfs");
  EXPECT_EQ(formatMilliseconds(milliseconds(100)), "100ms");
  for (auto c : {BoostCeiling{}, BoostCeiling{BoostCeiling::Kind::Max, 0},
                 BoostCeiling{BoostCeiling::Kind::Bytes, 123456789}}) {
    EXPECT_EQ(*parseBoostCeiling(formatBoostCeiling(c)), c);
  }
  EXPECT_EQ(*parseBoostBudget(formatBoostBudget({7, seconds(3600)})),
            (BoostBudget{7, seconds(3600)}));
  EXPECT_EQ(*parseMaxBoost(formatSeconds(seconds(45))), seconds(45));
  EXPECT_EQ(*parsePollInterval(formatMilliseconds(milliseconds(250))), milliseconds(250));
}

TEST(SetPolicyKnob, RuntimeSettingsUseTheSameParsers) {
  PolicySettings s;
  ASSERT_TRUE(setPolicyKnob(s, "boost", "deny", ValueSource::runtime()));
  ASSERT_TRUE(setPolicyKnob(s, "sync_isolation", "yes", ValueSource::runtime()));
  ASSERT_TRUE(setPolicyKnob(s, "boost_ceiling", "10M", ValueSource::runtime()));
  ASSERT_TRUE(setPolicyKnob(s, "max_boost_seconds", "10", ValueSource::runtime()));
  ASSERT_TRUE(setPolicyKnob(s, "boost_budget", "10% of 60s", ValueSource::runtime()));
  EXPECT_EQ(s.boost->value, BoostPermission::Deny);
  EXPECT_TRUE(s.syncIsolation->value);
  EXPECT_EQ(s.boostCeiling->value.bytesPerSecond, 10000000u);
  EXPECT_EQ(s.maxBoost->value, seconds(10));
  EXPECT_EQ(s.boostBudget->value, (BoostBudget{10, seconds(60)}));
  EXPECT_EQ(s.boost->source.describe(), "runtime");

  auto before = s.boost->value;
  EXPECT_FALSE(setPolicyKnob(s, "boost", "nope", ValueSource::runtime()));
  EXPECT_EQ(s.boost->value, before);
  EXPECT_EQ(setPolicyKnob(s, "isolate", "on", ValueSource::runtime()).error().message,
            "unknown policy knob 'isolate' (expected sync_isolation, boost, boost_ceiling, "
            "max_boost_seconds, boost_budget, tenant or tenant_sync)");
}

TEST(ValueSourceDescribe, AllKinds) {
  EXPECT_EQ(ValueSource::builtin().describe(), "default");
  EXPECT_EQ(ValueSource::runtime().describe(), "runtime");
  EXPECT_EQ(ValueSource::yaml("/etc/cxiosync/cxiosync.yaml", 12).describe(),
            "/etc/cxiosync/cxiosync.yaml:12");
  EXPECT_EQ(ValueSource::dropIn("/etc/systemd/system/a.slice.d/x.conf", 3).describe(),
            "/etc/systemd/system/a.slice.d/x.conf:3");
}

}  // namespace
}  // namespace cxiosync
