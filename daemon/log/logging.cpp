// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/log/logging.h"

#include <spdlog/async.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/uio.h>
#include <syslog.h>
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "policy/bytes_text.h"

#include <cctype>
#include <cstdlib>
#include <mutex>

namespace cxiosync {
namespace {

bool isKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// Parses `k=v k2="a b"` fully; nullopt when the text is not a field list.
std::optional<std::vector<std::pair<std::string, std::string>>> parseFields(std::string_view s) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    if (i == s.size()) break;
    size_t k = i;
    while (i < s.size() && isKeyChar(s[i])) ++i;
    if (i == k || i >= s.size() || s[i] != '=') return std::nullopt;
    std::string key(s.substr(k, i - k));
    ++i;
    std::string value;
    if (i < s.size() && s[i] == '"') {
      ++i;
      bool closed = false;
      while (i < s.size()) {
        char c = s[i++];
        if (c == '\\' && i < s.size()) {
          value.push_back(s[i++]);
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value.push_back(c);
        }
      }
      if (!closed) return std::nullopt;
    } else {
      while (i < s.size() && s[i] != ' ') value.push_back(s[i++]);
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// journald sink with structured fields. Runs on the async logger's thread.
class JournalSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string_view payload(msg.payload.data(), msg.payload.size());
    SplitMessage split = splitLogFields(payload);
    std::vector<std::string> strings;
    strings.reserve(split.fields.size() + 4);
    strings.push_back("MESSAGE=" + split.text);
    strings.push_back("PRIORITY=" + std::to_string(priority(msg.level)));
    strings.push_back("SYSLOG_IDENTIFIER=cxiosyncd");
    for (const auto& [k, v] : split.fields) {
      std::string key = "CXIOSYNC_";
      for (char c : k)
        key.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
      strings.push_back(key + "=" + v);
      if (k == "action")
        if (const char* id = messageIdForAction(v))
          strings.push_back(std::string("MESSAGE_ID=") + id);
    }
    std::vector<iovec> iov;
    iov.reserve(strings.size());
    for (auto& s : strings) iov.push_back(iovec{s.data(), s.size()});
    // Errors are dropped: there is nowhere better to report them, and logging must never
    // take the daemon down.
    (void)sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
  }
  void flush_() override {}

 private:
  static int priority(spdlog::level::level_enum l) {
    switch (l) {
      case spdlog::level::trace:
      case spdlog::level::debug:
        return LOG_DEBUG;
      case spdlog::level::info:
        return LOG_INFO;
      case spdlog::level::warn:
        return LOG_WARNING;
      case spdlog::level::err:
        return LOG_ERR;
      case spdlog::level::critical:
        return LOG_CRIT;
      default:
        return LOG_INFO;
    }
  }
};

}  // namespace

bool startedBySystemd() {
  return std::getenv("JOURNAL_STREAM") != nullptr || std::getenv("INVOCATION_ID") != nullptr;
}

std::optional<spdlog::level::level_enum> parseLogLevel(std::string_view s) {
  if (s == "trace") return spdlog::level::trace;
  if (s == "debug") return spdlog::level::debug;
  if (s == "info") return spdlog::level::info;
  if (s == "warning" || s == "warn") return spdlog::level::warn;
  if (s == "error" || s == "err") return spdlog::level::err;
  if (s == "critical" || s == "crit") return spdlog::level::critical;
  if (s == "off") return spdlog::level::off;
  return std::nullopt;
}

std::string logQuote(std::string_view bytes) {
  // A field's value is text, the name's bytes in the one escape of policy/bytes_text.h, as on
  // D-Bus and in metrics: journald would keep a field that is not UTF-8 as a blob, and the
  // name is then the same string everywhere an operator looks for it.
  const std::string value = textFromBytes(bytes);
  bool needs = value.empty();
  for (char c : value)
    if (c == ' ' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) needs = true;
  if (!needs) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(static_cast<unsigned char>(c) < 0x20 ? '?' : c);
  }
  out.push_back('"');
  return out;
}

SplitMessage splitLogFields(std::string_view message) {
  // The field list starts after the first "  " whose remainder parses completely as fields.
  size_t from = 0;
  while (true) {
    size_t pos = message.find("  ", from);
    if (pos == std::string_view::npos) break;
    size_t start = pos;
    while (start < message.size() && message[start] == ' ') ++start;
    if (auto fields = parseFields(message.substr(start))) {
      return SplitMessage{std::string(message.substr(0, pos)), std::move(*fields)};
    }
    from = pos + 2;
  }
  return SplitMessage{std::string(message), {}};
}

const char* messageIdForAction(std::string_view action) {
  // Generated with `systemd-id128 new`-style random ids; one per event type.
  if (action == "boost") return "58e6f04b3f8a4e5fa4ea9913834a7669";
  if (action == "restore") return "9a57428a4b6b4bd2ba42a1bb879120a6";
  if (action == "kept-changed") return "552683005e63496b8f4bd71a34463cb2";
  if (action == "refuse") return "ded8e4224cec45e5b067a0775d978167";
  if (action == "dry-run-boost") return "86fef0e8d0c64dd5a50c341d1e6a7c6a";
  if (action == "shutdown-lift") return "fcfb7a01fe4449299856a4ac04167c81";
  if (action == "journal-moved-aside") return "90c0a8298007424e85843ce4324d758b";
  if (action == "drop-gone") return "bef89ce79fdb490d9a3942b7d046b448";
  return nullptr;
}

void setupLogging(const LogSetup& setup) {
  bool journal =
      setup.target == LogTarget::Journal || (setup.target == LogTarget::Auto && startedBySystemd());
  spdlog::sink_ptr sink;
  if (journal) {
    sink = std::make_shared<JournalSink>();
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    sink->set_pattern("%Y-%m-%dT%H:%M:%S.%e cxiosyncd[%P] %l: %v");
  }
  std::shared_ptr<spdlog::logger> logger;
  if (setup.async) {
    // 8192 queued messages; when full the oldest is dropped instead of blocking the loop.
    spdlog::init_thread_pool(8192, 1);
    logger = std::make_shared<spdlog::async_logger>("cxiosyncd", sink, spdlog::thread_pool(),
                                                    spdlog::async_overflow_policy::overrun_oldest);
  } else {
    logger = std::make_shared<spdlog::logger>("cxiosyncd", sink);
  }
  logger->set_level(setup.level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

void shutdownLogging() {
  if (auto l = spdlog::default_logger()) l->flush();
  spdlog::shutdown();
}

}  // namespace cxiosync
