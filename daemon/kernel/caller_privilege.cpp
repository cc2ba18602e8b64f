// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/caller_privilege.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <optional>

#include "daemon/kernel/fs.h"
#include "policy/formats/proc.h"

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

Result<int64_t> parseFdinfoPid(std::string_view s) {
  auto line = statusField(s, "Pid");
  if (!line) return makeError("no Pid: line in pidfd fdinfo", EINVAL);
  std::string_view v = *line;
  while (!v.empty() && (v.front() == '\t' || v.front() == ' ')) v.remove_prefix(1);
  int64_t pid = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), pid);
  if (ec != std::errc() || ptr == v.data() || ptr != v.data() + v.size())
    return makeError("malformed Pid: line in pidfd fdinfo", EINVAL);
  return pid;
}

Result<PinnedProcess> PinnedProcess::open(pid_t pid, int pidfd, const std::string& procRoot) {
  if (pid <= 0) return makeError("no pid from the bus", ESRCH);
  std::string path = procRoot + "/" + std::to_string(pid);
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return makeError(path + " is gone", ESRCH);
  PinnedProcess p(UniqueFd(fd), std::move(path), pid, pidfd, 0);
  auto start = p.startTime();
  if (!start) return start.error();
  p.start_ = *start;
  return p;
}

Result<uint64_t> PinnedProcess::startTime() const {
  auto text = readFileAt(dir_.get(), "stat", path_ + "/stat");
  if (!text) return makeError(path_ + " is gone", ESRCH);
  auto stat = parseProcStat(*text);
  if (!stat) return makeError(path_ + "/stat: " + stat.error().message, ESRCH);
  return stat->startTimeTicks;
}

Status PinnedProcess::stillSame() const {
  auto now = startTime();
  if (!now) return now.error();
  if (*now != start_) return makeError(path_ + " changed its start time: another process", ESRCH);
  if (pidfd_ < 0) return Ok{};
  // A live pidfd process holds its pid: it had it through every read above. POLLIN means it
  // has exited (a zombie included); fdinfo's Pid (in our pid namespace) must be the bus's.
  struct pollfd pf {
    pidfd_, POLLIN, 0
  };
  if (::poll(&pf, 1, 0) != 0) return makeError(path_ + ": the bus's pidfd process exited", ESRCH);
  const std::string info = "/proc/self/fdinfo/" + std::to_string(pidfd_);
  int fd = ::open(info.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return makeError(info + " cannot be read", ESRCH);
  UniqueFd f(fd);
  auto text = readAll(f.get(), info);
  if (!text) return makeError(info + " cannot be read", ESRCH);
  auto owner = parseFdinfoPid(*text);
  if (!owner || *owner != pid_)
    return makeError(path_ + ": the bus's pidfd names another process", ESRCH);
  return Ok{};
}

namespace {

// st_dev/st_ino of a user namespace link (nsfs), without following anything but that link.
Result<std::pair<dev_t, ino_t>> userNs(int dirfd, const char* rel, const std::string& shown) {
  struct stat st {};
  if (::fstatat(dirfd, rel, &st, 0) != 0) return sysError(errno, "stat", shown);
  return std::pair{st.st_dev, st.st_ino};
}

std::string describeProblem(const PinnedProcess& p, const std::string& procRoot) {
  auto status = readFileAt(p.dir(), "status", p.path() + "/status");
  if (!status) return p.path() + " is gone";
  auto euid = parseStatusEuid(*status);
  if (!euid) return p.path() + ": " + euid.error().message;
  if (*euid != 0) return p.path() + " runs as uid " + std::to_string(*euid) + ", not root";
  auto caps = parseStatusCapEff(*status);
  if (!caps) return p.path() + ": " + caps.error().message;
  if (!(*caps & (uint64_t{1} << kCapSysAdmin)))
    return p.path() + " is root without CAP_SYS_ADMIN (a container's root on the host's bus?)";
  // A new user namespace shows a full CapEff that is worth nothing on the host.
  auto theirs = userNs(p.dir(), "ns/user", p.path() + "/ns/user");
  if (!theirs) return theirs.error().message;
  auto ours = userNs(AT_FDCWD, (procRoot + "/self/ns/user").c_str(), procRoot + "/self/ns/user");
  if (!ours) return ours.error().message;
  if (*theirs != *ours) return p.path() + " is root of another user namespace, not the daemon's";
  return {};
}

}  // namespace

std::string rootCallerProblem(pid_t pid, int pidfd, const std::string& procRoot) {
  auto pinned = PinnedProcess::open(pid, pidfd, procRoot);
  if (!pinned) return "the caller's process: " + pinned.error().message;
  std::string problem = describeProblem(*pinned, procRoot);
  // Checked after the reads, also when they found a problem: a log line must not name
  // another process's state as the caller's.
  auto same = pinned->stillSame();
  if (!same) return "the caller's process: " + same.error().message;
  return problem;
}

}  // namespace cxiosync
