// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/app/options.h"

#include <gtest/gtest.h>

#include "daemon/log/logging.h"

namespace cxiosync {
namespace {

TEST(OptionsTest, Defaults) {
  auto o = parseOptions({});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->configPath, "/etc/cxiosync");
  EXPECT_EQ(o->cgroupRoot, "/sys/fs/cgroup");
  EXPECT_EQ(o->runDir, "/run/cxiosync");
  EXPECT_EQ(o->devRoot, "/dev");
  EXPECT_FALSE(o->detector);
  EXPECT_FALSE(o->dryRun);
  EXPECT_FALSE(o->checkConfig);
}

// `cxiosyncd --check-config PATH`, as the docs have always written it (issue 27: the old
// parser said "unexpected argument").
TEST(OptionsTest, CheckConfigTakesAPositionalPath) {
  auto o = parseOptions({"--check-config", "/tmp/x.yaml"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_TRUE(o->checkConfig);
  EXPECT_EQ(o->configPath, "/tmp/x.yaml");
  o = parseOptions({"/tmp/x.yaml", "--check-config"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->configPath, "/tmp/x.yaml");
  EXPECT_FALSE(parseOptions({"/tmp/x.yaml"}));  // only with --check-config
  EXPECT_FALSE(parseOptions({"--check-config", "/a", "/b"}));
  EXPECT_FALSE(parseOptions({"--check-config", "--config=/a", "/b"}));
}

TEST(OptionsTest, AllFlagsBothSpellings) {
  auto o = parseOptions({"--config=/c.yaml", "--cgroup-root", "/cg", "--proc-root=/p",
                         "--sys-root=/s", "--tracefs-root=/t", "--run-dir", "/r", "--dev-root=/d",
                         "--detector=procfs", "--dry-run", "--foreground", "--log-level=debug",
                         "--assume-shutdown=yes", "--check-config"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->configPath, "/c.yaml");
  EXPECT_EQ(o->cgroupRoot, "/cg");
  EXPECT_EQ(o->procRoot, "/p");
  EXPECT_EQ(o->sysRoot, "/s");
  EXPECT_EQ(o->tracefsRoot, "/t");
  EXPECT_EQ(o->runDir, "/r");
  EXPECT_EQ(o->devRoot, "/d");
  EXPECT_EQ(o->detector, DetectorKind::Procfs);
  EXPECT_TRUE(o->dryRun);
  EXPECT_TRUE(o->foreground);
  EXPECT_EQ(o->logLevel, "debug");
  EXPECT_EQ(o->assumeShutdown, ShutdownOverride::Yes);
  EXPECT_TRUE(o->checkConfig);
  EXPECT_TRUE(parseOptions({"--version"})->version);
  EXPECT_TRUE(parseOptions({"-h"})->help);
  EXPECT_TRUE(parseOptions({"--observe"})->observe);
  EXPECT_TRUE(parseOptions({})->cgroupNamespace.empty());
  EXPECT_EQ(parseOptions({"--cgroupns=/proc/1/ns/cgroup"})->cgroupNamespace, "/proc/1/ns/cgroup");
  EXPECT_FALSE(parseOptions({"--cgroupns="}));
}

TEST(OptionsTest, BadFlagsAreClearErrors) {
  auto unknown = parseOptions({"--frobnicate"});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("--frobnicate"), std::string::npos);
  EXPECT_FALSE(parseOptions({"--config"}));         // missing value
  EXPECT_FALSE(parseOptions({"--config="}));        // empty value
  EXPECT_FALSE(parseOptions({"--detector=ebpf"}));  // bad enum
  EXPECT_FALSE(parseOptions({"--log-level=loud"}));
  EXPECT_FALSE(parseOptions({"--dry-run=yes"}));  // flag with a value
  EXPECT_FALSE(parseOptions({"stray"}));
  EXPECT_FALSE(parseOptions({"--assume-shutdown=maybe"}));
  auto det = parseOptions({"--detector=ebpf"});
  EXPECT_NE(det.error().message.find("ebpf"), std::string::npos);
}

// getopt_long underneath: one-line messages that name the option and the value.
TEST(OptionsTest, MessagesNameOptionAndValue) {
  auto msg = [](std::vector<std::string> args) {
    auto o = parseOptions(args);
    return o ? std::string("accepted") : o.error().message;
  };
  EXPECT_EQ(msg({"--config"}), "option --config needs a value (see --help)");
  EXPECT_EQ(msg({"--dry-run=yes"}), "option --dry-run takes no value (see --help)");
  EXPECT_EQ(msg({"--fore"}), "unknown option '--fore' (see --help)") << "no abbreviations";
  EXPECT_EQ(msg({"-x"}), "unknown option '-x' (see --help)");
  EXPECT_EQ(msg({"--", "stray"}), "unexpected argument 'stray' (see --help)");
  EXPECT_EQ(msg({"--detector", "ebpf"}).rfind("--detector: ", 0), 0u)
      << msg({"--detector", "ebpf"});
  EXPECT_EQ(msg({"--bus=elsewhere"}).rfind("--bus: 'elsewhere'", 0), 0u);
  EXPECT_EQ(msg({"--log-level", "loud"}).rfind("--log-level: 'loud'", 0), 0u);
  EXPECT_EQ(msg({"--assume-shutdown=maybe"}), "--assume-shutdown: 'maybe' is not yes or no");
  EXPECT_EQ(parseOptions({"--assume-shutdown", "no"})->assumeShutdown, ShutdownOverride::No);
  EXPECT_EQ(parseOptions({"--bus", "unix:path=/x"})->bus, "unix:path=/x");
}

TEST(OptionsTest, UnitDropInSource) {
  EXPECT_EQ(parseOptions({})->unitDropIns, UnitDropInMode::Auto);
  auto o = parseOptions({"--unit-dropins=files", "--unit-root", "/tmp/units"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->unitDropIns, UnitDropInMode::Files);
  EXPECT_EQ(o->unitRoot, "/tmp/units");
  EXPECT_EQ(parseOptions({"--unit-dropins=systemd"})->unitDropIns, UnitDropInMode::Systemd);
  EXPECT_EQ(parseOptions({"--unit-dropins=off"})->unitDropIns, UnitDropInMode::Off);
  auto bad = parseOptions({"--unit-dropins=etc"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'etc' is not auto, systemd, files or off"),
            std::string::npos);
}

TEST(OptionsTest, UsageMentionsExitCodes) {
  EXPECT_NE(usageText().find("6 invalid configuration"), std::string::npos);
  EXPECT_EQ(kExitBadConfig, 6);
  EXPECT_EQ(kExitUsage, 2);
}

TEST(LoggingTest, SplitFields) {
  auto s = splitLogFields(
      "boost /cg1 on 254:0: wbps 1048576 -> max  action=boost cgroup=/cg1 "
      "old=\"wbps=1048576 wiops=max\" reason=\"a \\\"b\\\"\"");
  EXPECT_EQ(s.text, "boost /cg1 on 254:0: wbps 1048576 -> max");
  ASSERT_EQ(s.fields.size(), 4u);
  EXPECT_EQ(s.fields[0], (std::pair<std::string, std::string>{"action", "boost"}));
  EXPECT_EQ(s.fields[2].second, "wbps=1048576 wiops=max");
  EXPECT_EQ(s.fields[3].second, "a \"b\"");
  auto plain = splitLogFields("no  fields here");
  EXPECT_EQ(plain.text, "no  fields here");
  EXPECT_TRUE(plain.fields.empty());
  EXPECT_EQ(logQuote("a b"), "\"a b\"");
  EXPECT_EQ(logQuote(""), "\"\"");
  EXPECT_EQ(logQuote("/cg1"), "/cg1");
  // Field values are text, bytes as \xNN like D-Bus and metrics (issue 16); the field parser
  // gives back that text.
  EXPECT_EQ(logQuote("/\xff"), "\"/\\\\xff\"");
  EXPECT_EQ(logQuote("/caf\xc3\xa9"), "/caf\xc3\xa9");
  auto f = splitLogFields("boost  cgroup=" + logQuote("/\xff x"));
  ASSERT_EQ(f.fields.size(), 1u);
  EXPECT_EQ(f.fields[0].second, "/\\xff x");
  EXPECT_STREQ(messageIdForAction("boost"), "58e6f04b3f8a4e5fa4ea9913834a7669");
  EXPECT_EQ(messageIdForAction("nope"), nullptr);
  EXPECT_EQ(parseLogLevel("warning"), spdlog::level::warn);
  EXPECT_FALSE(parseLogLevel("loud"));
}

}  // namespace
}  // namespace cxiosync
