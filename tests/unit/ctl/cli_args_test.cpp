// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace cxiosync::ctl {
namespace {

Result<Invocation> parse(std::vector<std::string> args) {
  return parseArgs(args);
}

TEST(CliArgs, DefaultsToStatusOnTheSystemBus) {
  auto inv = parse({});
  ASSERT_TRUE(inv);
  EXPECT_EQ(inv->verb, "status");
  EXPECT_EQ(inv->options.bus.kind, dbus::BusTarget::Kind::System);
  EXPECT_EQ(inv->options.json, JsonMode::Off);
}

TEST(CliArgs, OptionsAnywhere) {
  auto inv = parse({"--json=short", "isolate", "backup.slice", "on", "--runtime", "-q",
                    "--no-ask-password", "--bus", "unix:path=/tmp/x", "--no-pager", "--no-legend"});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->verb, "isolate");
  EXPECT_EQ(inv->args, (std::vector<std::string>{"backup.slice", "on"}));
  const auto& o = inv->options;
  EXPECT_EQ(o.json, JsonMode::Short);
  EXPECT_TRUE(o.runtime && o.quiet && o.noAskPassword && o.noPager && o.noLegend);
  EXPECT_EQ(o.bus.kind, dbus::BusTarget::Kind::Address);
  EXPECT_EQ(o.bus.address, "unix:path=/tmp/x");
}

TEST(CliArgs, JsonModes) {
  EXPECT_EQ(parse({"list", "--json"})->options.json, JsonMode::Pretty);
  EXPECT_EQ(parse({"list", "--json=pretty"})->options.json, JsonMode::Pretty);
  EXPECT_EQ(parse({"list", "--json=off"})->options.json, JsonMode::Off);
  EXPECT_FALSE(parse({"list", "--json=yaml"}));
}

TEST(CliArgs, Buses) {
  EXPECT_EQ(parse({"--bus=session"})->options.bus.kind, dbus::BusTarget::Kind::Session);
  EXPECT_EQ(parse({"--bus=system"})->options.bus.kind, dbus::BusTarget::Kind::System);
  EXPECT_FALSE(parse({"--bus=elsewhere"}));
  EXPECT_FALSE(parse({"--bus"}));
}

TEST(CliArgs, Errors) {
  EXPECT_FALSE(parse({"frobnicate"}));
  EXPECT_FALSE(parse({"show"}));
  EXPECT_FALSE(parse({"show", "a", "b"}));
  EXPECT_FALSE(parse({"isolate", "a"}));
  EXPECT_FALSE(parse({"--wat"}));
  EXPECT_FALSE(parse({"list", "--runtime"})) << "--runtime only for setters";
  EXPECT_FALSE(parse({"reset", "/a", "--runtime"}));
}

TEST(CliArgs, MessagesNameTheOption) {
  auto msg = [](std::vector<std::string> args) {
    auto r = parseArgs(args);
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_EQ(msg({"--wat"}), "unknown option '--wat' (see --help)");
  EXPECT_EQ(msg({"--no"}), "unknown option '--no' (see --help)") << "no abbreviations";
  EXPECT_EQ(msg({"list", "--bus"}), "option --bus needs a value (see --help)");
  EXPECT_EQ(msg({"list", "--quiet=1"}), "option --quiet takes no value (see --help)");
  EXPECT_EQ(msg({"list", "--json=yaml"}), "--json takes pretty, short or off, not 'yaml'");
  auto q = parse({"-q", "list", "--json", "short"});
  EXPECT_FALSE(q) << "--json takes its value only as --json=short";
}

TEST(CliArgs, DoubleDashEndsOptions) {
  auto inv = parse({"show", "--", "-weird"});
  ASSERT_TRUE(inv);
  EXPECT_EQ(inv->args, std::vector<std::string>{"-weird"});
}

TEST(CliArgs, HelpAndVersion) {
  EXPECT_EQ(parse({"-h"})->verb, "help");
  EXPECT_EQ(parse({"list", "--help"})->verb, "help");
  EXPECT_EQ(parse({"--version"})->verb, "version");
  EXPECT_NE(usage().find("check-config FILE"), std::string::npos);
}

TEST(CliArgs, UserTakesAUidANameOrTheCaller) {
  auto self = parse({"show", "--user", "app.slice"});
  ASSERT_TRUE(self) << self.error().message;
  EXPECT_EQ(self->options.userUid, static_cast<uint32_t>(::getuid()));
  EXPECT_EQ(parse({"--user=1000", "isolate", "x.service", "on"})->options.userUid, 1000u);
  EXPECT_EQ(parse({"--user=root", "reset", "x.service"})->options.userUid, 0u);
  EXPECT_FALSE(parse({"show", "x", "--user"})->options.userUid == std::nullopt);
  EXPECT_FALSE(parse({"show", "x"})->options.userUid);
  auto bad = parse({"show", "x", "--user=no-such-user-cxio"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--user"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parse({"show", "x", "--user=4294967295"})) << "(uid_t)-1 is not a uid";
  auto noCg = parse({"list", "--user"});
  ASSERT_FALSE(noCg);
  EXPECT_NE(noCg.error().message.find("take a CG"), std::string::npos);
}

}  // namespace
}  // namespace cxiosync::ctl
