// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Logging for the daemon: spdlog, asynchronous (a bounded queue drained by one logger thread,
// overrun-oldest), so a stalled journald or a blocked stderr pipe never stalls the event loop.
//
// Message convention: a sentence for people, then two spaces, then `key=value` fields
// (values with spaces are double-quoted, see logQuote):
//   "boost /cg1 on 254:0: wbps 1048576 -> max  action=boost cgroup=/cg1 device=254:0 ..."
// On stderr the line is printed as is. The journald sink puts the sentence in MESSAGE= and
// each field in CXIOSYNC_<KEY>= (upper-cased), and maps `action=` to a MESSAGE_ID, so
// `journalctl CXIOSYNC_ACTION=boost` and `journalctl MESSAGE_ID=...` work.
#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cxiosync {

enum class LogTarget { Auto, Journal, Stderr };

struct LogSetup {
  spdlog::level::level_enum level = spdlog::level::info;
  LogTarget target = LogTarget::Auto;  // Auto: journald when started by systemd
  bool async = true;
};

// Installs the default logger. Auto picks journald when JOURNAL_STREAM or INVOCATION_ID is
// set (we were started by systemd) — unless `--foreground` forces stderr.
void setupLogging(const LogSetup& setup);
// Flushes and stops the logger thread (call before exit).
void shutdownLogging();

// True when the environment says systemd started us.
bool startedBySystemd();

// Parses "trace|debug|info|warning|warn|error|critical|off".
std::optional<spdlog::level::level_enum> parseLogLevel(std::string_view s);

// A field value: the bytes as text (policy/bytes_text.h's textFromBytes: "\xff" for a byte that
// is not UTF-8, as D-Bus and metrics write it), quoted when empty or holding spaces, quotes,
// backslashes or control characters (those become '?').
std::string logQuote(std::string_view bytes);

// Splits "sentence  k=v k2=\"a b\"" into the sentence and its fields. A message without
// fields returns it whole with no fields.
struct SplitMessage {
  std::string text;
  std::vector<std::pair<std::string, std::string>> fields;
};
SplitMessage splitLogFields(std::string_view message);

// MESSAGE_ID for an `action=` value, or nullptr.
const char* messageIdForAction(std::string_view action);

}  // namespace cxiosync
