// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/cli/command_line.h"

#include <cerrno>
#include <charconv>

namespace cxiosync {

namespace {

Error usageError(std::string message) {
  return makeError(std::move(message), EINVAL);
}

}  // namespace

CommandLine::CommandLine(const std::vector<std::string>& args, const std::string& shortOptions,
                         std::vector<option> longOptions, Order order)
    : longOptions_(std::move(longOptions)) {
  storage_.reserve(args.size() + 1);
  storage_.push_back("cxiosync");  // argv[0]: getopt never reads it
  storage_.insert(storage_.end(), args.begin(), args.end());
  for (auto& s : storage_) argv_.push_back(s.data());
  argv_.push_back(nullptr);
  // '-': positionals come back in order as code 1; '+': stop at the first one. Either
  // overrides POSIXLY_CORRECT. ':': a missing value is ':' (not '?'), and no printing.
  shortOptions_ = std::string(order == Order::InOrder ? "-" : "+") + ":" + shortOptions;
  longOptions_.push_back(option{nullptr, 0, nullptr, 0});
}

Result<std::optional<CliArg>> CommandLine::next() {
  if (done_) return std::optional<CliArg>();
  const int argc = static_cast<int>(argv_.size()) - 1;
  if (!started_) {
    started_ = true;
    opterr = 0;
    optind = 0;  // glibc: 0 re-initialises, dropping an earlier parse's state
  }
  // The element getopt_long is about to read (a short-option cluster stays put until its
  // last letter): the text the messages quote.
  const int at = optind == 0 ? 1 : optind;
  const std::string written = at < argc ? argv_[at] : "";
  const bool isLong = written.rfind("--", 0) == 0;
  int index = -1;
  const int c = getopt_long(argc, argv_.data(), shortOptions_.c_str(), longOptions_.data(), &index);
  if (c == -1) {
    done_ = true;
    restIndex_ = optind;
    return std::optional<CliArg>();
  }
  if (c == CliArg::kPositional) return std::optional<CliArg>(CliArg{c, optarg, optarg});
  const std::string shortName =
      std::string("-") + static_cast<char>(c == '?' || c == ':' ? optopt : c);
  const std::string name = isLong ? written.substr(0, written.find('=')) : shortName;
  // getopt_long accepts any unambiguous prefix; we do not (see the header).
  const option* exact = nullptr;
  for (const auto& o : longOptions_) {
    if (o.name && name == std::string("--") + o.name) exact = &o;
  }
  if (isLong && !exact) return usageError("unknown option '" + name + "'");
  if (c == ':') return usageError("option " + name + " needs a value");
  if (c == '?') {
    if (exact && exact->has_arg == no_argument)
      return usageError("option " + name + " takes no value");
    return usageError("unknown option '" + name + "'");
  }
  CliArg arg{c, name, std::nullopt};
  if (optarg) arg.value = optarg;
  return std::optional<CliArg>(std::move(arg));
}

std::vector<std::string> CommandLine::rest() const {
  if (!done_ || restIndex_ < 1) return {};
  std::vector<std::string> out;
  for (size_t i = static_cast<size_t>(restIndex_); i + 1 < argv_.size(); ++i)
    out.emplace_back(argv_[i]);
  return out;
}

Result<uint64_t> parseCliNumber(const CliArg& arg, uint64_t min, uint64_t max) {
  const std::string v = arg.value.value_or("");
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || n < min || n > max)
    return cliValueError(
        arg, "'" + v + "' is not a number in " + std::to_string(min) + ".." + std::to_string(max));
  return n;
}

Error cliValueError(const CliArg& arg, const std::string& message) {
  return makeError(arg.name + ": " + message, EINVAL);
}

}  // namespace cxiosync
