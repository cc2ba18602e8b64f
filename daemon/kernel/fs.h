// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Low-level file helpers shared by the kernel adapters: an owned fd, openat relative to a
// directory fd without following symlinks, whole-file reads, "gone" classification, and
// the atomic replace the daemon's own state files use.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/result.h"

namespace cxiosync {

// An owned file descriptor (move-only, closed on destruction).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Errors whose errno means "the object went away while we looked": ENOENT, ENODEV, ESRCH
// (and ESTALE, which CgroupFs uses for "same name, different cgroup"). A gone cgroup or
// thread is a normal event, not a failure: callers test with isGone().
bool isGoneErrno(int code);
inline bool isGone(const Error& e) {
  return isGoneErrno(e.code);
}

// errno + "what path" message.
Error sysError(int code, std::string_view what, std::string_view path);

// How openBeneath() resolves `rel` below `dirfd`.
enum class Resolve {
  NoSymlinks,  // refuse any symlink and any ".." escape (cgroupfs, procfs task files)
  Follow,      // plain openat (sysfs, whose class/ and dev/ trees are symlinks)
};

// openat(dirfd, rel, flags|O_CLOEXEC). With Resolve::NoSymlinks: openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) where the kernel has it, else a component-
// by-component walk with O_NOFOLLOW. `rel` must be relative. Error message names
// `displayPath` (the caller's idea of the full path).
Result<UniqueFd> openBeneath(int dirfd, std::string_view rel, int flags, Resolve resolve,
                             std::string_view displayPath);

// Reads a whole (small, kernel-generated) file at dirfd/rel. NoSymlinks resolution.
Result<std::string> readFileAt(int dirfd, std::string_view rel, std::string_view displayPath,
                               Resolve resolve = Resolve::NoSymlinks);
// Reads from an open fd until EOF (pread from offset 0).
Result<std::string> readAll(int fd, std::string_view displayPath);

// Writes `data` in one write(2) call (kernel control files need one write per command).
Status writeFileAt(int dirfd, std::string_view rel, std::string_view data,
                   std::string_view displayPath, Resolve resolve = Resolve::NoSymlinks);

// Writes `text` to `path` via `path.tmp` (created with `mode`, O_NOFOLLOW) + rename, so a
// reader sees the old file or the new one. Never fsync'd: the daemon's files live on tmpfs
// or /var/lib, and an fsync on a throttled disk could block the event loop for minutes.
Status writeFileAtomically(const std::string& path, std::string_view text, mode_t mode = 0644);

// Names in a directory (no "." / ".."), with d_type (DT_UNKNOWN possible).
struct DirEntry {
  std::string name;
  unsigned char type = 0;
};
Result<std::vector<DirEntry>> listDir(int dirfd, std::string_view rel, std::string_view displayPath,
                                      Resolve resolve = Resolve::NoSymlinks);

// Parses a decimal non-negative integer name ("1234"); -1 when not all digits.
int64_t parseDecimalName(std::string_view s);

}  // namespace cxiosync
