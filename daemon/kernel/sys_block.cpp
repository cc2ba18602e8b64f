// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/sys_block.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "policy/formats/mountinfo.h"

namespace cxiosync {

DevNum devNumFromDevT(dev_t d) {
  return DevNum{::major(d), ::minor(d)};
}

Result<DevNum> statDevice(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return sysError(errno, "stat", path);
  // A loop backed by a block device (losetup /dev/sdb): the device itself, not the
  // filesystem holding its node (devtmpfs, an anonymous 0:N).
  if (S_ISBLK(st.st_mode)) return devNumFromDevT(st.st_rdev);
  return devNumFromDevT(st.st_dev);
}

Result<std::unique_ptr<SysBlock>> SysBlock::open(const std::string& root, StatDevFn statDev) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sysError(errno, "open sysfs root", root);
  return std::make_unique<SysBlock>(UniqueFd(fd), root, std::move(statDev));
}

SysBlock::SysBlock(UniqueFd rootFd, std::string root, StatDevFn statDev)
    : rootFd_(std::move(rootFd)), root_(std::move(root)), statDev_(std::move(statDev)) {
  if (!statDev_) statDev_ = statDevice;
}

std::string SysBlock::devDir(const DevNum& dev) const {
  return std::string(sysfile::kDevBlock) + "/" + dev.str();
}

namespace {

std::string trimNewline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Lexically joins a relative symlink target onto the link's directory and resolves "..";
// nullopt when the result would leave the root.
std::optional<std::vector<std::string>> resolveLexically(std::string_view linkDir,
                                                         std::string_view target) {
  if (!target.empty() && target.front() == '/') return std::nullopt;
  std::vector<std::string> parts;
  auto push = [&](std::string_view s) -> bool {
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find('/', i);
      if (j == std::string_view::npos) j = s.size();
      std::string_view c = s.substr(i, j - i);
      if (c == "..") {
        if (parts.empty()) return false;
        parts.pop_back();
      } else if (!c.empty() && c != ".") {
        parts.emplace_back(c);
      }
      i = j + 1;
    }
    return true;
  };
  if (!push(linkDir) || !push(target)) return std::nullopt;
  return parts;
}

}  // namespace

Result<std::string> SysBlock::nameOf(const DevNum& dev) const {
  std::string rel = devDir(dev);
  char buf[4096];
  ssize_t n = ::readlinkat(rootFd_.get(), rel.c_str(), buf, sizeof buf - 1);
  if (n < 0) return sysError(errno, "readlink", root_ + "/" + rel);
  std::string target(buf, static_cast<size_t>(n));
  auto slash = target.rfind('/');
  return slash == std::string::npos ? target : target.substr(slash + 1);
}

Result<DevNum> SysBlock::devOf(const std::string& name) const {
  if (name.empty() || name.find('/') != std::string::npos || name == "..") {
    return Error{EINVAL, "bad block device name \"" + name + "\""};
  }
  std::string rel = std::string(sysfile::kClassBlock) + "/" + name + "/" + sysfile::kDev;
  auto text = readFileAt(rootFd_.get(), rel, root_ + "/" + rel, Resolve::Follow);
  if (!text) return text.error();
  auto dev = parseDevNum(trimNewline(*text));
  if (!dev) return Error{0, root_ + "/" + rel + ": " + dev.error().message};
  return dev;
}

Result<std::vector<DevNum>> SysBlock::list() const {
  auto entries = listDir(rootFd_.get(), sysfile::kClassBlock, root_ + "/" + sysfile::kClassBlock,
                         Resolve::Follow);
  if (!entries) return entries.error();
  std::vector<DevNum> out;
  for (const auto& e : *entries) {
    auto dev = devOf(e.name);
    if (dev) out.push_back(*dev);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool SysBlock::isPartition(const DevNum& dev) const {
  std::string rel = devDir(dev) + "/" + sysfile::kPartition;
  struct stat st;
  return ::fstatat(rootFd_.get(), rel.c_str(), &st, 0) == 0;
}

Result<DevNum> SysBlock::wholeDisk(const DevNum& dev) const {
  if (!isPartition(dev)) return dev;
  std::string rel = devDir(dev);
  char buf[4096];
  ssize_t n = ::readlinkat(rootFd_.get(), rel.c_str(), buf, sizeof buf - 1);
  if (n < 0) return sysError(errno, "readlink", root_ + "/" + rel);
  auto parts = resolveLexically(sysfile::kDevBlock, std::string_view(buf, static_cast<size_t>(n)));
  if (!parts || parts->size() < 2) {
    return Error{EINVAL, root_ + "/" + rel + ": unexpected link target"};
  }
  // .../block/sda/sda1: the parent directory is the whole disk.
  std::string parentRel;
  for (size_t i = 0; i + 1 < parts->size(); ++i) {
    if (i) parentRel += '/';
    parentRel += (*parts)[i];
  }
  parentRel += "/";
  parentRel += sysfile::kDev;
  auto text = readFileAt(rootFd_.get(), parentRel, root_ + "/" + parentRel, Resolve::Follow);
  if (!text) return text.error();
  auto parent = parseDevNum(trimNewline(*text));
  if (!parent) return Error{0, root_ + "/" + parentRel + ": " + parent.error().message};
  return parent;
}

Result<std::optional<std::string>> SysBlock::loopBackingFile(const DevNum& dev) const {
  std::string rel = devDir(dev) + "/" + sysfile::kLoopBackingFile;
  auto text = readFileAt(rootFd_.get(), rel, root_ + "/" + rel, Resolve::Follow);
  if (!text) {
    // Not a loop device (no loop/ dir) or an unbound loop device (no backing_file).
    if (text.error().code == ENOENT) return std::optional<std::string>{};
    return text.error();
  }
  std::string path = *text;
  if (!path.empty() && path.back() == '\n') path.pop_back();
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() &&
      std::string_view(path).substr(path.size() - kDeleted.size()) == kDeleted) {
    path.resize(path.size() - kDeleted.size());
  }
  if (path.empty()) return std::optional<std::string>{};
  return std::optional<std::string>(path);
}

Result<std::vector<DevNum>> SysBlock::lowerOf(const DevNum& dev) const {
  std::set<DevNum> out;
  std::string slavesRel = devDir(dev) + "/" + sysfile::kSlaves;
  auto slaves = listDir(rootFd_.get(), slavesRel, root_ + "/" + slavesRel, Resolve::Follow);
  if (slaves) {
    for (const auto& s : *slaves) {
      auto d = devOf(s.name);
      if (!d) continue;
      auto whole = wholeDisk(*d);
      out.insert(whole ? *whole : *d);
    }
  } else if (slaves.error().code != ENOENT) {
    return slaves.error();
  }
  auto backing = loopBackingFile(dev);
  if (!backing) return backing.error();
  if (*backing) {
    auto st = statDev_(**backing);
    if (!st) return st.error();
    if (st->major != 0) {  // anonymous devices (tmpfs, overlay) carry no io.max
      auto whole = wholeDisk(*st);
      out.insert(whole ? *whole : *st);
    }
  }
  out.erase(dev);
  return std::vector<DevNum>(out.begin(), out.end());
}

DeviceStack SysBlock::buildStack() const {
  DeviceStack stack;
  auto devs = list();
  if (!devs) return stack;
  for (const auto& d : *devs) {
    if (isPartition(d)) continue;
    auto lower = lowerOf(d);
    if (lower && !lower->empty()) stack.lower[d] = std::move(*lower);
  }
  return stack;
}

Result<DevNum> filesystemDevice(const DevNum& stDev, std::string_view mountInfoText,
                                const SysBlock& sys) {
  if (stDev.major != 0) return stDev;
  auto mounts = parseMountInfo(mountInfoText);
  if (!mounts) return mounts.error();
  for (const auto& m : *mounts) {
    if (m.dev != stDev) continue;
    if (m.source.rfind("/dev/", 0) != 0) continue;
    std::string name = m.source.substr(m.source.rfind('/') + 1);
    auto d = sys.devOf(name);
    if (d) return d;
    struct stat st;
    if (::stat(m.source.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
      return devNumFromDevT(st.st_rdev);
    }
  }
  return Error{ENODEV, "no block device behind anonymous device " + stDev.str()};
}

}  // namespace cxiosync
