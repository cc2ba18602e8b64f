// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/cgroup_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

namespace cxiosync {

namespace {

std::string relOf(const CgroupPath& p) {
  return p.isRoot() ? std::string(".") : p.relative();
}

std::string joinDisplay(const std::string& root, const CgroupPath& p) {
  return p.isRoot() ? root : root + "/" + p.relative();
}

}  // namespace

Result<std::unique_ptr<CgroupFs>> CgroupFs::open(const std::string& root) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sysError(errno, "open cgroup root", root);
  return std::make_unique<CgroupFs>(UniqueFd(fd), root);
}

CgroupFs::CgroupFs(UniqueFd rootFd, std::string root)
    : rootFd_(std::move(rootFd)), root_(std::move(root)) {}

Result<CgroupDir> CgroupFs::openDir(const CgroupPath& path) const {
  std::string display = joinDisplay(root_, path);
  auto fd =
      openBeneath(rootFd_.get(), relOf(path), O_RDONLY | O_DIRECTORY, Resolve::NoSymlinks, display);
  if (!fd) return fd.error();
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) return sysError(errno, "fstat", display);
  return CgroupDir(std::move(*fd), path, static_cast<uint64_t>(st.st_ino), std::move(display));
}

Result<CgroupDir> CgroupFs::openDirExpecting(const CgroupPath& path, uint64_t expectedInode) const {
  auto dir = openDir(path);
  if (!dir) return dir.error();
  if (dir->inode() != expectedInode) {
    return Error{ESTALE, "cgroup " + dir->display() + " was replaced (inode " +
                             std::to_string(dir->inode()) + ", expected " +
                             std::to_string(expectedInode) + ")"};
  }
  return dir;
}

Result<uint64_t> CgroupFs::inodeOf(const CgroupPath& path) const {
  auto dir = openDir(path);
  if (!dir) return dir.error();
  return dir->inode();
}

Result<std::vector<std::string>> CgroupFs::listChildren(const CgroupDir& dir) const {
  auto entries = listDir(dir.fd(), ".", dir.display());
  if (!entries) return entries.error();
  std::vector<std::string> out;
  for (auto& e : *entries) {
    if (e.type == DT_DIR) {
      out.push_back(std::move(e.name));
    } else if (e.type == DT_UNKNOWN) {
      struct stat st;
      if (::fstatat(dir.fd(), e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISDIR(st.st_mode)) {
        out.push_back(std::move(e.name));
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> CgroupFs::readRaw(const CgroupDir& dir, const char* file) const {
  return readFileAt(dir.fd(), file, dir.display() + "/" + file);
}

namespace {

// A missing control file while the directory itself still exists means "controller not
// enabled here"; a missing directory means gone.
bool dirStillThere(int dirfd) {
  struct stat st;
  return ::fstat(dirfd, &st) == 0 && st.st_nlink > 0;
}

template <class T, class Parse>
Result<std::optional<T>> readOptional(const CgroupFs& fs, const CgroupDir& dir, const char* file,
                                      Parse parse) {
  auto text = fs.readRaw(dir, file);
  if (!text) {
    if (text.error().code == ENOENT && dirStillThere(dir.fd())) {
      // Distinguish "controller disabled" from "cgroup removed": a removed cgroup's
      // directory fd has no cgroup.controllers any more.
      struct stat st;
      if (::fstatat(dir.fd(), cgfile::kCgroupControllers, &st, 0) == 0) {
        return std::optional<T>{};
      }
    }
    return text.error();
  }
  auto parsed = parse(*text);
  if (!parsed) {
    return Error{parsed.error().code, dir.display() + "/" + file + ": " + parsed.error().message};
  }
  return std::optional<T>(std::move(*parsed));
}

}  // namespace

Result<std::optional<std::vector<IoMaxEntry>>> CgroupFs::readIoMax(const CgroupDir& dir) const {
  return readOptional<std::vector<IoMaxEntry>>(*this, dir, cgfile::kIoMax, parseIoMax);
}

std::optional<uint64_t> parseNrDescendants(std::string_view text) {
  // cgroup.stat is the same flat "KEY VALUE" format as memory.stat (cgroup_stat_show prints
  // "%s %d\n" lines), so memory.stat's strict parser reads it.
  auto kv = parseMemoryStat(text);
  if (!kv) return std::nullopt;
  auto it = kv->values.find("nr_descendants");
  if (it == kv->values.end()) return std::nullopt;
  return it->second;
}

Result<std::optional<uint64_t>> CgroupFs::readNrDescendants(const CgroupDir& dir) const {
  auto text = readRaw(dir, cgfile::kCgroupStat);
  if (!text) {
    if (text.error().code == ENOENT && dirStillThere(dir.fd())) return std::optional<uint64_t>{};
    return text.error();
  }
  return parseNrDescendants(*text);
}

Result<std::vector<IoStatEntry>> CgroupFs::readIoStat(const CgroupDir& dir) const {
  auto text = readRaw(dir, cgfile::kIoStat);
  if (!text) return text.error();
  auto parsed = parseIoStat(*text);
  if (!parsed) return Error{0, dir.display() + "/io.stat: " + parsed.error().message};
  return parsed;
}

Result<std::optional<MemoryStat>> CgroupFs::readMemoryStat(const CgroupDir& dir) const {
  return readOptional<MemoryStat>(*this, dir, cgfile::kMemoryStat, parseMemoryStat);
}

Result<CgroupEvents> CgroupFs::readCgroupEvents(const CgroupDir& dir) const {
  auto text = readRaw(dir, cgfile::kCgroupEvents);
  if (!text) return text.error();
  auto parsed = parseCgroupEvents(*text);
  if (!parsed) return Error{0, dir.display() + "/cgroup.events: " + parsed.error().message};
  return parsed;
}

Result<std::optional<IoMaxEntry>> CgroupFs::readIoMaxFor(const CgroupDir& dir,
                                                         const DevNum& dev) const {
  auto all = readIoMax(dir);
  if (!all) return all.error();
  if (!*all) return Error{ENOENT, dir.display() + "/io.max: io controller not enabled"};
  for (auto& e : **all) {
    if (e.dev == dev) return std::optional<IoMaxEntry>(e);
  }
  return std::optional<IoMaxEntry>{};
}

bool ioMaxReadsBackAs(const IoMaxEntry& written, const std::optional<IoMaxEntry>& actual) {
  auto check = [](const std::optional<uint64_t>& w, const std::optional<uint64_t>& a) {
    if (!w) return true;
    uint64_t av = a.value_or(kUnlimited);
    return *w == av;
  };
  IoLimits none;
  const IoLimits& a = actual ? actual->limits : none;
  return check(written.limits.rbps, a.rbps) && check(written.limits.wbps, a.wbps) &&
         check(written.limits.riops, a.riops) && check(written.limits.wiops, a.wiops);
}

Result<std::optional<IoMaxEntry>> CgroupFs::writeIoMax(const CgroupDir& dir,
                                                       const IoMaxEntry& entry) const {
  std::string line = formatIoMaxLine(entry) + "\n";
  std::string display = dir.display() + "/" + cgfile::kIoMax;
  auto st = writeFileAt(dir.fd(), cgfile::kIoMax, line, display);
  if (!st) {
    Error e = st.error();
    e.message += " (writing \"" + formatIoMaxLine(entry) + "\")";
    return e;
  }
  auto back = readIoMaxFor(dir, entry.dev);
  if (!back) return back.error();
  if (!ioMaxReadsBackAs(entry, *back)) {
    return Error{EIO, display + ": wrote \"" + formatIoMaxLine(entry) + "\" but read back \"" +
                          (*back ? formatIoMaxLine(**back) : std::string("(no line)")) + "\""};
  }
  return back;
}

Status CgroupFs::writeIoMax(const CgroupPath& path, const IoMaxEntry& entry) const {
  auto dir = openDir(path);
  if (!dir) return dir.error();
  auto r = writeIoMax(*dir, entry);
  if (!r) return r.error();
  return Ok{};
}

Status CgroupFs::writeIoMax(const CgroupPath& path, const IoMaxEntry& entry,
                            uint64_t expectedInode) const {
  auto dir = openDirExpecting(path, expectedInode);
  if (!dir) return dir.error();
  auto r = writeIoMax(*dir, entry);
  if (!r) return r.error();
  return Ok{};
}

}  // namespace cxiosync
