// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// procfs adapter (--proc-root, default /proc): threads, their state, syscall and cgroup,
// and the device behind an open fd. All opens are O_CLOEXEC and relative to the root fd.
// A thread or process that exits mid-read is a gone error (ENOENT/ESRCH), not a failure.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/kernel/fs.h"
#include "policy/formats/proc.h"
#include "policy/model/cgroup_path.h"
#include "policy/model/dev_num.h"
#include "policy/result.h"

namespace cxiosync {

namespace procfile {
inline constexpr const char* kStat = "stat";
inline constexpr const char* kStatus = "status";
inline constexpr const char* kSyscall = "syscall";
inline constexpr const char* kCgroup = "cgroup";
inline constexpr const char* kTask = "task";
inline constexpr const char* kFd = "fd";
inline constexpr const char* kMountInfo = "mountinfo";
}  // namespace procfile

inline constexpr const char* kDefaultProcRoot = "/proc";

class ProcFs {
 public:
  static Result<std::unique_ptr<ProcFs>> open(const std::string& root = kDefaultProcRoot);
  ProcFs(UniqueFd rootFd, std::string root);
  virtual ~ProcFs() = default;

  const std::string& root() const { return root_; }
  int rootFd() const { return rootFd_.get(); }

  // Numeric entries of the root (thread group ids).
  virtual Result<std::vector<int64_t>> listPids() const;
  // /proc/PID/task entries. Gone when the process exited.
  virtual Result<std::vector<int64_t>> listTids(int64_t pid) const;

  // /proc/PID/task/TID/{stat,syscall,cgroup}.
  virtual Result<ProcStat> readTaskStat(int64_t pid, int64_t tid) const;
  virtual Result<ProcSyscall> readTaskSyscall(int64_t pid, int64_t tid) const;
  // The thread's cgroup v2 path relative to the cgroup root; nullopt when it has none.
  virtual Result<std::optional<CgroupPath>> readTaskCgroup(int64_t pid, int64_t tid) const;

  // By tid alone (/proc/TID/... resolves any thread id, as tracefs reports tids).
  Result<ProcStat> readThreadStat(int64_t tid) const;
  Result<ProcSyscall> readThreadSyscall(int64_t tid) const;
  Result<std::optional<CgroupPath>> readThreadCgroup(int64_t tid) const;
  // Tgid: line of /proc/TID/status: the process the thread belongs to.
  Result<int64_t> readThreadTgid(int64_t tid) const;

  // st_dev of the file open as fd `fd` in process/thread `id` (stat of /proc/ID/fd/FD,
  // following the magic link). Gone when the process or the fd went away.
  Result<DevNum> fdDevice(int64_t id, int64_t fd) const;

  // The scan's fast path: calls fn for every thread with its raw stat line and state. A
  // single-threaded process costs one read (/proc/PID/stat, num_threads = 1); others one
  // task/ listing plus one read per thread. The stat files stay open between scans (one
  // pread(2) per thread and pass instead of open+read+close; an fd of a dead task reads
  // ESRCH and is reopened, so a reused tid is never read through the old task), up to
  // statFdCacheLimit() fds (RLIMIT_NOFILE soft limit - 256); beyond that files are opened
  // per read. Threads that vanish mid-scan are skipped. Returns the number of processes.
  struct ThreadView {
    int64_t pid = 0;
    int64_t tid = 0;
    char state = '?';
    std::string_view stat;  // valid during the call only
  };
  virtual Result<uint64_t> forEachThread(const std::function<void(const ThreadView&)>& fn) const;

  size_t statFdCacheSize() const { return statCache_.size(); }
  size_t statFdCacheLimit() const;
  void dropStatFdCache() const { statCache_.clear(); }

  // /proc/self/mountinfo text (for device-of-path lookups).
  Result<std::string> readSelfMountInfo() const;

 private:
  Result<std::string> readRel(const std::string& rel) const;
  struct CachedStat {
    UniqueFd fd;
    uint64_t pass = 0;
  };
  // key: pid * 2 for /proc/PID/stat, tid * 2 + 1 for /proc/PID/task/TID/stat.
  ssize_t readStatCached(int dirfd, int64_t key, const char* rel, char* buf, size_t cap) const;
  mutable std::unordered_map<int64_t, CachedStat> statCache_;
  mutable uint64_t pass_ = 0;
  mutable size_t cacheLimit_ = 0;
  UniqueFd rootFd_;
  std::string root_;
};

// From a /proc stat line: the state letter ('?' if malformed) and num_threads (0 if not
// found), without a full parse.
char statStateOf(std::string_view stat);
int64_t statNumThreads(std::string_view stat);

// Parses the "Tgid:" line of /proc/TID/status.
Result<int64_t> parseStatusTgid(std::string_view text);

}  // namespace cxiosync
