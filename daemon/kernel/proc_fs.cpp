// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/proc_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <unistd.h>
#include <algorithm>

#include <charconv>
#include <cstdio>

namespace cxiosync {

Result<std::unique_ptr<ProcFs>> ProcFs::open(const std::string& root) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sysError(errno, "open proc root", root);
  return std::make_unique<ProcFs>(UniqueFd(fd), root);
}

ProcFs::ProcFs(UniqueFd rootFd, std::string root)
    : rootFd_(std::move(rootFd)), root_(std::move(root)) {}

namespace {

std::vector<int64_t> numericEntries(const std::vector<DirEntry>& entries) {
  std::vector<int64_t> out;
  out.reserve(entries.size());
  for (const auto& e : entries) {
    int64_t v = parseDecimalName(e.name);
    if (v > 0) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string taskRel(int64_t pid, int64_t tid, const char* file) {
  std::string s = std::to_string(pid);
  s += "/task/";
  s += std::to_string(tid);
  s += '/';
  s += file;
  return s;
}

std::string threadRel(int64_t tid, const char* file) {
  return std::to_string(tid) + "/" + file;
}

// A process that exits between readdir and open gives ENOENT; reading a file of a task
// that has just died can give ESRCH. Both are "gone".
Result<std::optional<CgroupPath>> cgroupFromText(const Result<std::string>& text) {
  if (!text) return text.error();
  auto v2 = parseProcCgroupV2(*text);
  if (!v2) return v2.error();
  if (!*v2) return std::optional<CgroupPath>{};
  auto path = CgroupPath::parse(**v2);
  if (!path) return path.error();
  return std::optional<CgroupPath>(std::move(*path));
}

}  // namespace

Result<std::string> ProcFs::readRel(const std::string& rel) const {
  return readFileAt(rootFd_.get(), rel, root_ + "/" + rel);
}

Result<std::vector<int64_t>> ProcFs::listPids() const {
  auto entries = listDir(rootFd_.get(), ".", root_);
  if (!entries) return entries.error();
  return numericEntries(*entries);
}

Result<std::vector<int64_t>> ProcFs::listTids(int64_t pid) const {
  std::string rel = std::to_string(pid) + "/task";
  auto entries = listDir(rootFd_.get(), rel, root_ + "/" + rel);
  if (!entries) return entries.error();
  return numericEntries(*entries);
}

Result<ProcStat> ProcFs::readTaskStat(int64_t pid, int64_t tid) const {
  auto text = readRel(taskRel(pid, tid, procfile::kStat));
  if (!text) return text.error();
  return parseProcStat(*text);
}

Result<ProcSyscall> ProcFs::readTaskSyscall(int64_t pid, int64_t tid) const {
  auto text = readRel(taskRel(pid, tid, procfile::kSyscall));
  if (!text) return text.error();
  return parseProcSyscall(*text);
}

Result<std::optional<CgroupPath>> ProcFs::readTaskCgroup(int64_t pid, int64_t tid) const {
  return cgroupFromText(readRel(taskRel(pid, tid, procfile::kCgroup)));
}

Result<ProcStat> ProcFs::readThreadStat(int64_t tid) const {
  auto text = readRel(threadRel(tid, procfile::kStat));
  if (!text) return text.error();
  return parseProcStat(*text);
}

Result<ProcSyscall> ProcFs::readThreadSyscall(int64_t tid) const {
  auto text = readRel(threadRel(tid, procfile::kSyscall));
  if (!text) return text.error();
  return parseProcSyscall(*text);
}

Result<std::optional<CgroupPath>> ProcFs::readThreadCgroup(int64_t tid) const {
  return cgroupFromText(readRel(threadRel(tid, procfile::kCgroup)));
}

Result<int64_t> parseStatusTgid(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    if (line.substr(0, 5) == "Tgid:") {
      std::string_view v = line.substr(5);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      int64_t out = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
      if (ec != std::errc() || out <= 0) return Error{0, "bad Tgid line"};
      (void)p;
      return out;
    }
    pos = eol + 1;
  }
  return Error{0, "no Tgid line in status"};
}

Result<int64_t> ProcFs::readThreadTgid(int64_t tid) const {
  auto text = readRel(threadRel(tid, procfile::kStatus));
  if (!text) return text.error();
  return parseStatusTgid(*text);
}

Result<DevNum> ProcFs::fdDevice(int64_t id, int64_t fd) const {
  // The fd entry is a magic link: stat follows it to the open file (the one deliberate
  // follow; the link is resolved by the kernel to the file object, not by name).
  std::string rel = std::to_string(id) + "/fd/" + std::to_string(fd);
  struct stat st;
  if (::fstatat(rootFd_.get(), rel.c_str(), &st, 0) != 0) {
    return sysError(errno, "stat", root_ + "/" + rel);
  }
  return DevNum{::major(st.st_dev), ::minor(st.st_dev)};
}

char statStateOf(std::string_view stat) {
  auto rp = stat.rfind(')');
  if (rp == std::string_view::npos || rp + 2 >= stat.size()) return '?';
  return stat[rp + 2];
}

int64_t statNumThreads(std::string_view stat) {
  auto rp = stat.rfind(')');
  if (rp == std::string_view::npos) return 0;
  // ") S ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
  //  cutime cstime priority nice num_threads": num_threads is the 18th field after ')'.
  size_t pos = rp + 1;
  for (int field = 0; field < 18; ++field) {
    pos = stat.find(' ', pos);
    if (pos == std::string_view::npos) return 0;
    ++pos;
  }
  int64_t v = 0;
  auto end = stat.find(' ', pos);
  std::string_view num =
      stat.substr(pos, end == std::string_view::npos ? stat.size() - pos : end - pos);
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  (void)p;
  return ec == std::errc() ? v : 0;
}

namespace {

// Cache keys: process-level /proc/PID/stat and thread-level task/TID/stat of the same
// number are different files.
int64_t processKey(int64_t pid) {
  return pid * 2;
}
int64_t threadKey(int64_t tid) {
  return tid * 2 + 1;
}

}  // namespace

size_t ProcFs::statFdCacheLimit() const {
  if (cacheLimit_ == 0) {
    struct rlimit rl {};
    size_t soft = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 ? static_cast<size_t>(rl.rlim_cur) : 1024;
    cacheLimit_ = soft > 512 ? soft - 256 : 1;  // 1: effectively no caching
  }
  return cacheLimit_;
}

ssize_t ProcFs::readStatCached(int dirfd, int64_t key, const char* rel, char* buf,
                               size_t cap) const {
  auto it = statCache_.find(key);
  if (it != statCache_.end()) {
    ssize_t n = ::pread(it->second.fd.get(), buf, cap, 0);
    if (n > 0) {
      it->second.pass = pass_;
      return n;
    }
    statCache_.erase(it);  // dead task (ESRCH) or reused number: reopen below
  }
  int fd = ::openat(dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  ssize_t n = ::pread(fd, buf, cap, 0);
  if (n > 0 && statCache_.size() < statFdCacheLimit()) {
    statCache_.emplace(key, CachedStat{UniqueFd(fd), pass_});
  } else {
    ::close(fd);
  }
  return n;
}

Result<uint64_t> ProcFs::forEachThread(const std::function<void(const ThreadView&)>& fn) const {
  auto pids = listPids();
  if (!pids) return pids.error();
  ++pass_;
  uint64_t processes = 0;
  char buf[1024];
  char rel[64];
  for (int64_t pid : *pids) {
    std::snprintf(rel, sizeof rel, "%lld/stat", static_cast<long long>(pid));
    ssize_t n = readStatCached(rootFd_.get(), processKey(pid), rel, buf, sizeof buf);
    if (n <= 0) continue;
    ++processes;
    std::string_view st(buf, static_cast<size_t>(n));
    if (statNumThreads(st) == 1) {
      fn(ThreadView{pid, pid, statStateOf(st), st});
      continue;
    }
    std::snprintf(rel, sizeof rel, "%lld/task", static_cast<long long>(pid));
    int taskFd = ::openat(rootFd_.get(), rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (taskFd < 0) continue;
    UniqueFd task(taskFd);
    auto tids = listDir(task.get(), ".", rel);
    if (!tids) continue;
    for (const auto& e : *tids) {
      int64_t tid = parseDecimalName(e.name);
      if (tid <= 0) continue;
      std::snprintf(rel, sizeof rel, "%lld/stat", static_cast<long long>(tid));
      ssize_t m = readStatCached(task.get(), threadKey(tid), rel, buf, sizeof buf);
      if (m <= 0) continue;
      std::string_view ts(buf, static_cast<size_t>(m));
      fn(ThreadView{pid, tid, statStateOf(ts), ts});
    }
  }
  // Close the files of tasks not seen in this pass.
  for (auto it = statCache_.begin(); it != statCache_.end();) {
    if (it->second.pass != pass_) {
      it = statCache_.erase(it);
    } else {
      ++it;
    }
  }
  return processes;
}

Result<std::string> ProcFs::readSelfMountInfo() const {
  return readFileAt(rootFd_.get(), "self/mountinfo", root_ + "/self/mountinfo", Resolve::Follow);
}

}  // namespace cxiosync
