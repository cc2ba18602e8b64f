// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// One command-line style for every cxiosync program: GNU getopt_long, as systemd's
// parse_argv and oomd's main use it. "--name=VALUE" and "--name VALUE", "-x VALUE", bundled
// short flags and "--" behave alike in cxiosyncd, cxiosyncctl, cxiosync-loop, the nbd
// server and observe. Unlike plain getopt_long:
//   - errors are values with a one-line message naming what was written
//     ("unknown option '--frob'", "option --size needs a value",
//     "option --dry-run takes no value"); getopt's own printing is off;
//   - an abbreviated long option ("--fore" for "--foreground") is an unknown option: a new
//     option must never change what an existing command line means;
//   - order is explicit (POSIXLY_CORRECT in the environment changes nothing).
// getopt_long keeps its state in globals (optind, optarg): one CommandLine at a time, on
// one thread. Pure otherwise (no I/O).
#include <getopt.h>
#include <cstdint>

#include <optional>
#include <string>
#include <vector>

#include "policy/result.h"

namespace cxiosync {

struct CliArg {
  static constexpr int kPositional = 1;  // getopt_long's code for a non-option argument
  int id = 0;        // the option's `val` (a short option's letter), or kPositional
  std::string name;  // as written, without "=VALUE" ("--size", "-o"); a positional's text
  std::optional<std::string> value;  // the option's value; a positional's text
};

class CommandLine {
 public:
  enum class Order {
    InOrder,           // options and positionals anywhere, returned in command-line order
    StopAtPositional,  // stop at the first positional (global options before a command)
  };

  // args: argv without argv[0]. shortOptions in getopt syntax ("hqo:"), longOptions
  // without the terminating zero entry.
  CommandLine(const std::vector<std::string>& args, const std::string& shortOptions,
              std::vector<option> longOptions, Order order = Order::InOrder);
  CommandLine(const CommandLine&) = delete;  // argv_ points into storage_
  CommandLine& operator=(const CommandLine&) = delete;

  // The next option or positional; nullopt after the last one, at "--", or (StopAtPositional)
  // at the first positional. rest() then holds what is left.
  Result<std::optional<CliArg>> next();

  // What next() left: the arguments after "--", or from the first positional on.
  std::vector<std::string> rest() const;

 private:
  std::vector<std::string> storage_;
  std::vector<char*> argv_;
  std::string shortOptions_;
  std::vector<option> longOptions_;
  bool started_ = false;
  bool done_ = false;
  int restIndex_ = 0;  // argv index of the first argument rest() returns
};

// Strict non-negative integer ("0".."max"; no sign, no spaces, no suffix).
Result<uint64_t> parseCliNumber(const CliArg& arg, uint64_t min, uint64_t max);

// An error naming the option and the value: "--detector: 'ebpf' is not auto, tracefs or
// procfs" from the option and a value parser's message.
Error cliValueError(const CliArg& arg, const std::string& message);

}  // namespace cxiosync
