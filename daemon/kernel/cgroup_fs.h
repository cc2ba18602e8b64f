// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// cgroup v2 filesystem adapter. Everything is read and written relative to an O_CLOEXEC
// directory fd of the cgroup root (--cgroup-root, default /sys/fs/cgroup), never following a
// symlink, so nothing escapes the root. A cgroup is identified by path *and* directory inode:
// a cgroup removed and recreated under the same name has a new inode and is never confused
// with the old one (operations taking an expected inode fail with ESTALE, a "gone" error).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/kernel/fs.h"
#include "policy/formats/cgroup_events.h"
#include "policy/formats/io_max.h"
#include "policy/formats/io_stat.h"
#include "policy/formats/memory_stat.h"
#include "policy/model/cgroup_path.h"
#include "policy/result.h"

namespace cxiosync {

namespace cgfile {
inline constexpr const char* kIoMax = "io.max";
inline constexpr const char* kIoStat = "io.stat";
inline constexpr const char* kMemoryStat = "memory.stat";
inline constexpr const char* kCgroupEvents = "cgroup.events";
inline constexpr const char* kCgroupControllers = "cgroup.controllers";
inline constexpr const char* kSubtreeControl = "cgroup.subtree_control";
inline constexpr const char* kCgroupProcs = "cgroup.procs";
inline constexpr const char* kCgroupThreads = "cgroup.threads";
inline constexpr const char* kCgroupStat = "cgroup.stat";
}  // namespace cgfile

inline constexpr const char* kDefaultCgroupRoot = "/sys/fs/cgroup";

// An open cgroup directory. Reads through it keep referring to the same cgroup even if the
// name is reused; after removal they fail with a gone error (ENOENT/ENODEV).
class CgroupDir {
 public:
  CgroupDir(UniqueFd fd, CgroupPath path, uint64_t inode, std::string display)
      : fd_(std::move(fd)), path_(std::move(path)), inode_(inode), display_(std::move(display)) {}
  int fd() const { return fd_.get(); }
  const CgroupPath& path() const { return path_; }
  uint64_t inode() const { return inode_; }
  // "<root>/a/b", for messages.
  const std::string& display() const { return display_; }

 private:
  UniqueFd fd_;
  CgroupPath path_;
  uint64_t inode_ = 0;
  std::string display_;
};

class CgroupFs {
 public:
  // Opens the root directory. Fails when it does not exist or is not a directory.
  static Result<std::unique_ptr<CgroupFs>> open(const std::string& root = kDefaultCgroupRoot);
  CgroupFs(UniqueFd rootFd, std::string root);
  virtual ~CgroupFs() = default;

  const std::string& root() const { return root_; }

  // Opens a cgroup directory (no symlinks followed). Gone error when absent.
  virtual Result<CgroupDir> openDir(const CgroupPath& path) const;
  // As openDir, but fails with ESTALE (isGone() true) when the directory's inode is not
  // `expectedInode`: the cgroup was removed and recreated under the same name.
  Result<CgroupDir> openDirExpecting(const CgroupPath& path, uint64_t expectedInode) const;
  // The directory inode (= tracefs cgroup_ino, ls -di). Gone error when absent.
  Result<uint64_t> inodeOf(const CgroupPath& path) const;

  // Child cgroup names (sorted). Gone error when `dir` was removed.
  virtual Result<std::vector<std::string>> listChildren(const CgroupDir& dir) const;

  // Reads. A missing file (controller not enabled) reads as nullopt for io.max and
  // memory.stat; a removed cgroup is a gone error.
  virtual Result<std::optional<std::vector<IoMaxEntry>>> readIoMax(const CgroupDir& dir) const;
  virtual Result<std::vector<IoStatEntry>> readIoStat(const CgroupDir& dir) const;
  virtual Result<std::optional<MemoryStat>> readMemoryStat(const CgroupDir& dir) const;
  virtual Result<CgroupEvents> readCgroupEvents(const CgroupDir& dir) const;
  // cgroup.stat nr_descendants: live cgroups below `dir` (4.14+; on the root too). mkdir
  // and rmdir anywhere below change it at once, so one small read tells whether the tree
  // changed since a walk. nullopt when the file is absent or has no such line.
  Result<std::optional<uint64_t>> readNrDescendants(const CgroupDir& dir) const;
  // Raw text of a control file (for diagnostics).
  Result<std::string> readRaw(const CgroupDir& dir, const char* file) const;

  // The io.max line for one device as the kernel holds it now; nullopt = no line (all max).
  Result<std::optional<IoMaxEntry>> readIoMaxFor(const CgroupDir& dir, const DevNum& dev) const;

  // Writes one io.max line (formatIoMaxLine: only the keys present in `entry`) and reads it
  // back: fails with EIO when a written key does not read back as written. The only write
  // the daemon ever performs on cgroupfs. Returns what the kernel holds afterwards.
  virtual Result<std::optional<IoMaxEntry>> writeIoMax(const CgroupDir& dir,
                                                       const IoMaxEntry& entry) const;
  Status writeIoMax(const CgroupPath& path, const IoMaxEntry& entry) const;
  // Guarded form for the executor: refuses (ESTALE) when the cgroup is not the one with
  // `expectedInode`.
  Status writeIoMax(const CgroupPath& path, const IoMaxEntry& entry, uint64_t expectedInode) const;

 private:
  UniqueFd rootFd_;
  std::string root_;
};

// cgroup.stat text ("nr_descendants N" among other "key value" lines) -> N; nullopt when
// there is no well-formed nr_descendants line. Pure.
std::optional<uint64_t> parseNrDescendants(std::string_view cgroupStat);

// True when every key `written` holds matches `actual` (absent line = all keys max).
bool ioMaxReadsBackAs(const IoMaxEntry& written, const std::optional<IoMaxEntry>& actual);

}  // namespace cxiosync
