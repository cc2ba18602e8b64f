// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace cxiosync {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}

UniqueFd::~UniqueFd() {
  reset();
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

bool isGoneErrno(int code) {
  return code == ENOENT || code == ENODEV || code == ESRCH || code == ESTALE;
}

Error sysError(int code, std::string_view what, std::string_view path) {
  std::string msg;
  msg.reserve(what.size() + path.size() + 32);
  msg.append(what).append(" ").append(path).append(": ").append(std::strerror(code));
  return Error{code, std::move(msg)};
}

namespace {

// -1 unknown, 0 no, 1 yes
int gHaveOpenat2 = -1;

long sysOpenat2(int dirfd, const char* path, struct open_how* how) {
#ifdef SYS_openat2
  return ::syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
#else
  (void)dirfd;
  (void)path;
  (void)how;
  errno = ENOSYS;
  return -1;
#endif
}

bool validRelative(std::string_view rel) {
  if (rel.empty() || rel.front() == '/') return false;
  size_t i = 0;
  while (i <= rel.size()) {
    size_t j = rel.find('/', i);
    if (j == std::string_view::npos) j = rel.size();
    std::string_view comp = rel.substr(i, j - i);
    if (comp == "..") return false;
    i = j + 1;
  }
  return rel.find('\0') == std::string_view::npos;
}

// Component walk with O_NOFOLLOW: every intermediate component opened O_PATH|O_DIRECTORY.
int walkNoFollow(int dirfd, std::string_view rel, int flags) {
  int cur = dirfd;
  int owned = -1;
  size_t i = 0;
  while (true) {
    size_t j = rel.find('/', i);
    bool last = j == std::string_view::npos;
    std::string comp(rel.substr(i, last ? std::string_view::npos : j - i));
    if (comp.empty() || comp == ".") {
      if (last) {
        // "a/" or "." as the last component: reopen the current directory.
        int fd = ::openat(cur, ".", flags | O_CLOEXEC);
        int e = errno;
        if (owned >= 0) ::close(owned);
        errno = e;
        return fd;
      }
      i = j + 1;
      continue;
    }
    int fd = last ? ::openat(cur, comp.c_str(), flags | O_CLOEXEC | O_NOFOLLOW)
                  : ::openat(cur, comp.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    int e = errno;
    if (owned >= 0) ::close(owned);
    if (fd < 0) {
      // O_NOFOLLOW on a symlink: ELOOP (or ENOTDIR for O_DIRECTORY on a link).
      errno = e;
      return -1;
    }
    if (last) return fd;
    owned = cur = fd;
    i = j + 1;
  }
}

}  // namespace

Result<UniqueFd> openBeneath(int dirfd, std::string_view rel, int flags, Resolve resolve,
                             std::string_view displayPath) {
  if (!validRelative(rel)) return sysError(EINVAL, "refusing path", displayPath);
  std::string relStr(rel);
  if (resolve == Resolve::Follow) {
    int fd = ::openat(dirfd, relStr.c_str(), flags | O_CLOEXEC);
    if (fd < 0) return sysError(errno, "open", displayPath);
    return UniqueFd(fd);
  }
  if (gHaveOpenat2 != 0) {
    struct open_how how;
    std::memset(&how, 0, sizeof how);
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = sysOpenat2(dirfd, relStr.c_str(), &how);
    if (fd >= 0) {
      gHaveOpenat2 = 1;
      return UniqueFd(static_cast<int>(fd));
    }
    if (errno == ENOSYS || errno == EPERM /* seccomp */) {
      gHaveOpenat2 = 0;
    } else {
      return sysError(errno, "open", displayPath);
    }
  }
  int fd = walkNoFollow(dirfd, relStr, flags);
  if (fd < 0) return sysError(errno, "open", displayPath);
  return UniqueFd(fd);
}

Result<std::string> readAll(int fd, std::string_view displayPath) {
  std::string out;
  char buf[8192];
  off_t off = 0;
  while (true) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return sysError(errno, "read", displayPath);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return out;
}

Result<std::string> readFileAt(int dirfd, std::string_view rel, std::string_view displayPath,
                               Resolve resolve) {
  auto fd = openBeneath(dirfd, rel, O_RDONLY, resolve, displayPath);
  if (!fd) return fd.error();
  return readAll(fd->get(), displayPath);
}

Status writeFileAt(int dirfd, std::string_view rel, std::string_view data,
                   std::string_view displayPath, Resolve resolve) {
  auto fd = openBeneath(dirfd, rel, O_WRONLY, resolve, displayPath);
  if (!fd) return fd.error();
  while (true) {
    ssize_t n = ::write(fd->get(), data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return sysError(errno, "write", displayPath);
    }
    if (static_cast<size_t>(n) != data.size()) return sysError(EIO, "short write", displayPath);
    return Ok{};
  }
}

Result<std::vector<DirEntry>> listDir(int dirfd, std::string_view rel, std::string_view displayPath,
                                      Resolve resolve) {
  auto fd = openBeneath(dirfd, rel, O_RDONLY | O_DIRECTORY, resolve, displayPath);
  if (!fd) return fd.error();
  DIR* d = ::fdopendir(fd->get());
  if (!d) return sysError(errno, "opendir", displayPath);
  fd->release();
  std::vector<DirEntry> out;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    out.push_back(DirEntry{e->d_name, e->d_type});
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return sysError(err, "readdir", displayPath);
  return out;
}

int64_t parseDecimalName(std::string_view s) {
  if (s.empty() || s.size() > 18) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

Status writeFileAtomically(const std::string& path, std::string_view text, mode_t mode) {
  std::string tmp = path + ".tmp";
  auto fail = [&](const std::string& what, int e) {
    ::unlink(tmp.c_str());
    return makeError(what + ": " + strerror(e), e);
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return makeError("create " + tmp + ": " + strerror(errno), errno);
  for (size_t off = 0; off < text.size();) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return fail("write " + tmp, e);
    }
    off += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return fail("close " + tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename " + tmp + " -> " + path, errno);
  return Ok{};
}

}  // namespace cxiosync
