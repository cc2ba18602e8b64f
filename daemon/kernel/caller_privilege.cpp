// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/caller_privilege.h"

#include <fcntl.h>

#include <cerrno>
#include <charconv>
#include <optional>

#include "daemon/kernel/fs.h"

namespace cxiosync {
namespace {

// The text after "KEY:" on status line KEY, to the end of that line.
std::optional<std::string_view> statusField(std::string_view s, std::string_view key) {
  size_t at = 0;
  while (true) {
    if (s.compare(at, key.size(), key) == 0 && s.size() > at + key.size() &&
        s[at + key.size()] == ':') {
      std::string_view line = s.substr(at + key.size() + 1);
      return line.substr(0, line.find('\n'));
    }
    at = s.find('\n', at);
    if (at == std::string_view::npos) return std::nullopt;
    ++at;
  }
}

}  // namespace

Result<uint32_t> parseStatusEuid(std::string_view s) {
  auto line = statusField(s, "Uid");
  if (!line) return makeError("no Uid: line in /proc status", EINVAL);
  // "\treal\teffective\tsaved\tfs"
  uint32_t v[2] = {0, 0};
  size_t pos = 0;
  for (int k = 0; k < 2; ++k) {
    while (pos < line->size() && ((*line)[pos] == '\t' || (*line)[pos] == ' ')) ++pos;
    const char* b = line->data() + pos;
    const char* e = line->data() + line->size();
    auto [ptr, ec] = std::from_chars(b, e, v[k]);
    if (ec != std::errc() || ptr == b)
      return makeError("malformed Uid: line in /proc status", EINVAL);
    pos = static_cast<size_t>(ptr - line->data());
  }
  return v[1];
}

Result<uint64_t> parseStatusCapEff(std::string_view s) {
  auto line = statusField(s, "CapEff");
  if (!line) return makeError("no CapEff: line in /proc status", EINVAL);
  std::string_view v = *line;
  while (!v.empty() && (v.front() == '\t' || v.front() == ' ')) v.remove_prefix(1);
  uint64_t caps = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), caps, 16);
  if (ec != std::errc() || ptr == v.data() || ptr != v.data() + v.size())
    return makeError("malformed CapEff: line in /proc status", EINVAL);
  return caps;
}

std::string rootCallerProblem(pid_t pid, const std::string& procRoot) {
  if (pid <= 0) return "the caller's process is not known (no pid from the bus)";
  const std::string who = "process " + std::to_string(pid);
  const std::string pdir = procRoot + "/" + std::to_string(pid);
  int pfd = ::open(pdir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (pfd < 0) return "the caller's " + who + " is gone";
  UniqueFd proc(pfd);
  auto status = readFileAt(proc.get(), "status", pdir + "/status");
  if (!status) return "the caller's " + who + " is gone";
  auto euid = parseStatusEuid(*status);
  if (!euid) return who + ": " + euid.error().message;
  if (*euid != 0) return who + " runs as uid " + std::to_string(*euid) + ", not root";
  auto caps = parseStatusCapEff(*status);
  if (!caps) return who + ": " + caps.error().message;
  if (!(*caps & (uint64_t{1} << kCapSysAdmin)))
    return who +
           " is root without CAP_SYS_ADMIN (a container's root on the host's bus?); "
           "uid 0 is trusted only with it";
  return {};
}

}  // namespace cxiosync
