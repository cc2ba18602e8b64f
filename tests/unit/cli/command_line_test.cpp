// SPDX-License-Identifier: GPL-2.0-or-later
// policy/cli/command_line.h: getopt_long with errors as values, no abbreviations, explicit
// order. Every program's command line goes through it.
#include "policy/cli/command_line.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace cxiosync {
namespace {

enum : int { kSize = 256, kFlag, kMode };

std::vector<option> opts() {
  return {{"size", required_argument, nullptr, kSize},
          {"sizelimit", required_argument, nullptr, kSize},
          {"flag", no_argument, nullptr, kFlag},
          {"mode", optional_argument, nullptr, kMode},
          {"quiet", no_argument, nullptr, 'q'}};
}

// "id:name=value" per item, "P:text" for positionals, then "| rest..." or "! message".
std::string run(std::vector<std::string> args,
                CommandLine::Order order = CommandLine::Order::InOrder) {
  CommandLine cl(args, "qo:", opts(), order);
  std::string out;
  while (true) {
    auto a = cl.next();
    if (!a) return out + "! " + a.error().message;
    if (!*a) break;
    const CliArg& x = **a;
    out += (x.id == CliArg::kPositional ? std::string("P") : std::to_string(x.id)) + ":" + x.name +
           (x.value && x.id != CliArg::kPositional ? "=" + *x.value : "") + " ";
  }
  out += "|";
  for (const auto& r : cl.rest()) out += " " + r;
  return out;
}

TEST(CommandLine, BothValueSpellingsAndOrder) {
  EXPECT_EQ(run({"a", "--size=1M", "b", "--size", "2M", "-q", "-o", "x", "-oy"}),
            "P:a 256:--size=1M P:b 256:--size=2M 113:-q 111:-o=x 111:-o=y |");
  EXPECT_EQ(run({"--sizelimit=5"}), "256:--sizelimit=5 |");
  EXPECT_EQ(run({"--mode", "--mode=on"}), "258:--mode 258:--mode=on |");
  EXPECT_EQ(run({"--size="}), "256:--size= |") << "an empty value is the caller's to judge";
}

TEST(CommandLine, DoubleDashAndStopAtPositional) {
  EXPECT_EQ(run({"x", "--", "-q", "--size"}), "P:x | -q --size");
  EXPECT_EQ(run({"-q", "cmd", "--flag"}, CommandLine::Order::StopAtPositional),
            "113:-q | cmd --flag");
  EXPECT_EQ(run({"-", ""}), "P:- P: |");
}

TEST(CommandLine, ErrorsNameTheOption) {
  EXPECT_EQ(run({"--frob"}), "! unknown option '--frob'");
  EXPECT_EQ(run({"--frob=1"}), "! unknown option '--frob'");
  EXPECT_EQ(run({"-x"}), "! unknown option '-x'");
  EXPECT_EQ(run({"--size"}), "! option --size needs a value");
  EXPECT_EQ(run({"-o"}), "! option -o needs a value");
  EXPECT_EQ(run({"--flag=yes"}), "! option --flag takes no value");
}

TEST(CommandLine, NoAbbreviations) {
  // getopt_long alone would take "--fl" for "--flag" and "--siz" for "--size".
  EXPECT_EQ(run({"--fl"}), "! unknown option '--fl'");
  EXPECT_EQ(run({"--siz", "1"}), "! unknown option '--siz'");
  EXPECT_EQ(run({"--s=1"}), "! unknown option '--s'") << "ambiguous";
}

TEST(CommandLine, PosixlyCorrectChangesNothing) {
  ::setenv("POSIXLY_CORRECT", "1", 1);
  const std::string r = run({"a", "--flag"});
  ::unsetenv("POSIXLY_CORRECT");
  EXPECT_EQ(r, "P:a 257:--flag |");
}

TEST(CommandLine, ParsersRunOneAfterAnother) {
  EXPECT_EQ(run({"-q", "--siz"}), "113:-q ! unknown option '--siz'");
  EXPECT_EQ(run({"-q"}), "113:-q |") << "the previous parse's state is gone";
}

TEST(CommandLine, Numbers) {
  CliArg a{kSize, "--workers", std::string("4")};
  EXPECT_EQ(*parseCliNumber(a, 1, 16), 4u);
  for (const char* bad : {"0", "17", "-1", "four", "4x", "", " 4"}) {
    a.value = bad;
    auto n = parseCliNumber(a, 1, 16);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_EQ(n.error().message, "--workers: '" + std::string(bad) + "' is not a number in 1..16");
  }
}

}  // namespace
}  // namespace cxiosync
