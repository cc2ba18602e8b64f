// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/loop/loop_kernel.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace cxiosync {

namespace {

// Bookworm's glibc struct statx has no stx_dio_* fields (its kernel headers know
// STATX_DIOALIGN, older ones may not): call the syscall with the kernel's layout.
#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x00002000U
#endif
constexpr unsigned kStatxBasic = 0x000007ffU;

struct KStatxTimestamp {
  int64_t tv_sec;
  uint32_t tv_nsec;
  int32_t reserved;
};
struct KStatx {
  uint32_t mask;
  uint32_t blksize;
  uint64_t attributes;
  uint32_t nlink;
  uint32_t uid;
  uint32_t gid;
  uint16_t mode;
  uint16_t spare0;
  uint64_t ino;
  uint64_t size;
  uint64_t blocks;
  uint64_t attributesMask;
  KStatxTimestamp atime, btime, ctime, mtime;
  uint32_t rdevMajor, rdevMinor, devMajor, devMinor;
  uint64_t mntId;
  uint32_t dioMemAlign;
  uint32_t dioOffsetAlign;
  uint64_t spare3[12];
};
static_assert(sizeof(KStatx) == 0x100);
static_assert(offsetof(KStatx, dioMemAlign) == 0x98);

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

uint64_t toU64(const std::string& s) {
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') break;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

Error ioctlError(int err, const char* what, int fd) {
  return makeError(std::string(what) + " on fd " + std::to_string(fd) + ": " + std::strerror(err),
                   err);
}

template <class Arg>
int xioctl(int fd, unsigned long req, Arg arg) {
  int r;
  do {
    r = ::ioctl(fd, req, arg);
  } while (r < 0 && errno == EINTR);
  return r;
}

}  // namespace

// ---- LoopSysfs ---------------------------------------------------------------------------

Result<std::unique_ptr<LoopSysfs>> LoopSysfs::open(const std::string& sysRoot) {
  int fd = ::open(sysRoot.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sysError(errno, "open sysfs root", sysRoot);
  return std::make_unique<LoopSysfs>(UniqueFd(fd), sysRoot);
}

Result<std::vector<int>> LoopSysfs::listIndices() const {
  auto entries = listDir(rootFd_.get(), loopfile::kSysBlock, root_ + "/block", Resolve::Follow);
  if (!entries) return entries.error();
  std::vector<int> out;
  for (const auto& e : *entries) {
    if (e.name.rfind("loop", 0) != 0) continue;
    int64_t n = parseDecimalName(std::string_view(e.name).substr(4));
    if (n >= 0 && n < (1 << 20)) out.push_back(static_cast<int>(n));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<LoopKernelState> LoopSysfs::read(int index) const {
  const std::string dir = "block/loop" + std::to_string(index) + "/";
  auto rd = [&](const char* name) -> Result<std::string> {
    auto r = readFileAt(rootFd_.get(), dir + name, root_ + "/" + dir + name, Resolve::Follow);
    if (!r) return r.error();
    return trim(std::move(*r));
  };
  LoopKernelState s;
  s.index = index;
  auto dev = rd(loopfile::kDev);
  if (!dev) return dev.error();
  auto dn = parseDevNum(*dev);
  if (!dn) return makeError(root_ + "/" + dir + "dev: " + dn.error().message, EINVAL);
  s.devnum = *dn;
  if (auto ro = rd(loopfile::kRo)) s.readOnly = *ro == "1";
  if (auto sz = rd(loopfile::kSize)) s.sizeBytes = toU64(*sz) * 512;
  if (auto lbs = rd(loopfile::kLogicalBlockSize))
    s.logicalBlockSize = static_cast<uint32_t>(toU64(*lbs));
  if (auto nr = rd(loopfile::kNrRequests)) s.requestDepth = static_cast<uint32_t>(toU64(*nr));
  if (auto seq = rd(loopfile::kDiskseq)) s.diskseq = toU64(*seq);
  auto bf = rd(loopfile::kBackingFile);
  if (!bf) {
    if (isGone(bf.error())) return s;  // not bound: no loop/ directory
    return bf.error();
  }
  s.bound = true;
  s.backingFile = *bf;
  if (auto v = rd(loopfile::kOffset)) s.offset = toU64(*v);
  if (auto v = rd(loopfile::kSizeLimit)) s.sizeLimit = toU64(*v);
  if (auto v = rd(loopfile::kAutoclear)) s.autoclear = *v == "1";
  if (auto v = rd(loopfile::kPartscan)) s.partscan = *v == "1";
  if (auto v = rd(loopfile::kDio)) s.directIo = *v == "1";
  return s;
}

uint32_t LoopSysfs::logicalBlockSize(const DevNum& dev) const {
  const std::string d = std::string(loopfile::kDevBlock) + "/" + dev.str();
  auto dirFd =
      openBeneath(rootFd_.get(), d, O_RDONLY | O_DIRECTORY, Resolve::Follow, root_ + "/" + d);
  if (!dirFd) return 0;
  // A partition has no queue/: its disk is the parent directory.
  const bool part = ::faccessat(dirFd->get(), loopfile::kPartition, F_OK, 0) == 0;
  const std::string rel = part ? "../queue/logical_block_size" : "queue/logical_block_size";
  int fd = ::openat(dirFd->get(), rel.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  UniqueFd f(fd);
  auto text = readAll(f.get(), rel);
  if (!text) return 0;
  return static_cast<uint32_t>(toU64(trim(*text)));
}

DevNum LoopSysfs::wholeDisk(const DevNum& dev) const {
  const std::string d = std::string(loopfile::kDevBlock) + "/" + dev.str();
  auto dirFd =
      openBeneath(rootFd_.get(), d, O_RDONLY | O_DIRECTORY, Resolve::Follow, root_ + "/" + d);
  if (!dirFd) return dev;
  if (::faccessat(dirFd->get(), loopfile::kPartition, F_OK, 0) != 0) return dev;
  int fd = ::openat(dirFd->get(), "../dev", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return dev;
  UniqueFd f(fd);
  auto text = readAll(f.get(), "../dev");
  if (!text) return dev;
  auto dn = parseDevNum(trim(*text));
  return dn ? *dn : dev;
}

// ---- LinuxLoopKernel ---------------------------------------------------------------------

Result<std::unique_ptr<LinuxLoopKernel>> LinuxLoopKernel::open(const LinuxLoopKernelOptions& o) {
  auto sys = LoopSysfs::open(o.sysRoot);
  if (!sys) return sys.error();
  return std::unique_ptr<LinuxLoopKernel>(new LinuxLoopKernel(o, std::move(*sys)));
}

std::string LinuxLoopKernel::devicePath(int index) const {
  return opts_.devRoot + "/loop" + std::to_string(index);
}

Result<int> LinuxLoopKernel::getFree() {
  const std::string path = opts_.devRoot + "/" + loopfile::kLoopControl;
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return sysError(errno, "open", path);
  UniqueFd ctl(fd);
  int n = xioctl(ctl.get(), LOOP_CTL_GET_FREE, 0);
  if (n < 0) return makeError(path + ": LOOP_CTL_GET_FREE: " + std::strerror(errno), errno);
  return n;
}

Result<UniqueFd> LinuxLoopKernel::openDevice(int index, bool writable, bool waitForNode) {
  usedPrivateNode_ = false;
  const std::string path = devicePath(index);
  const int flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  const auto deadline = std::chrono::steady_clock::now() + opts_.nodeTimeout;
  int lastErr = 0;
  while (true) {
    int fd = ::open(path.c_str(), flags);
    if (fd >= 0) return UniqueFd(fd);
    lastErr = errno;
    // udev/devtmpfs may create the node (or fix its mode) a moment after the device exists.
    if (!waitForNode || (lastErr != ENOENT && lastErr != EACCES))
      return sysError(lastErr, "open", path);
    if (std::chrono::steady_clock::now() >= deadline) break;
    sleepFor(std::chrono::milliseconds(10));
  }
  if (opts_.privateNodeDir.empty())
    return makeError(path + " did not appear within " + std::to_string(opts_.nodeTimeout.count()) +
                         " ms (" + std::strerror(lastErr) + ")",
                     ETIMEDOUT);
  // Static /dev (containers): a private node, unlinked as soon as it is open.
  auto st = sysfs_->read(index);
  if (!st) return st.error();
  const std::string node =
      opts_.privateNodeDir + "/.loop" + std::to_string(index) + "." + std::to_string(::getpid());
  ::unlink(node.c_str());
  if (::mknod(node.c_str(), S_IFBLK | 0600, makedev(st->devnum.major, st->devnum.minor)) != 0)
    return makeError(
        path + " did not appear, and mknod " + node + " failed: " + std::strerror(errno),
        ETIMEDOUT);
  int fd = ::open(node.c_str(), flags);
  int e = errno;
  ::unlink(node.c_str());
  if (fd < 0) return sysError(e, "open", node);
  usedPrivateNode_ = true;
  return UniqueFd(fd);
}

Result<UniqueFd> LinuxLoopKernel::lockDevice(int devFd) {
  return lockDeviceNode(devFd);
}

Status LinuxLoopKernel::configure(int devFd, const loop_config& config) {
  if (xioctl(devFd, LOOP_CONFIGURE, &config) < 0) return ioctlError(errno, "LOOP_CONFIGURE", devFd);
  return Ok{};
}

Status LinuxLoopKernel::setFd(int devFd, int backingFd) {
  if (xioctl(devFd, LOOP_SET_FD, backingFd) < 0) return ioctlError(errno, "LOOP_SET_FD", devFd);
  return Ok{};
}

Status LinuxLoopKernel::setStatus(int devFd, const loop_info64& info) {
  if (xioctl(devFd, LOOP_SET_STATUS64, &info) < 0)
    return ioctlError(errno, "LOOP_SET_STATUS64", devFd);
  return Ok{};
}

Result<LoopStatus64> LinuxLoopKernel::getStatus(int devFd) {
  loop_info64 info;
  std::memset(&info, 0, sizeof info);
  if (xioctl(devFd, LOOP_GET_STATUS64, &info) < 0)
    return ioctlError(errno, "LOOP_GET_STATUS64", devFd);
  LoopStatus64 s;
  s.device = DevNum{::major(info.lo_device), ::minor(info.lo_device)};
  s.rdevice = DevNum{::major(info.lo_rdevice), ::minor(info.lo_rdevice)};
  s.inode = info.lo_inode;
  s.offset = info.lo_offset;
  s.sizeLimit = info.lo_sizelimit;
  s.flags = info.lo_flags;
  return s;
}

Status LinuxLoopKernel::clearFd(int devFd) {
  if (xioctl(devFd, LOOP_CLR_FD, 0) < 0) return ioctlError(errno, "LOOP_CLR_FD", devFd);
  return Ok{};
}

Status LinuxLoopKernel::setCapacity(int devFd) {
  if (xioctl(devFd, LOOP_SET_CAPACITY, 0) < 0) return ioctlError(errno, "LOOP_SET_CAPACITY", devFd);
  return Ok{};
}

Status LinuxLoopKernel::setDirectIo(int devFd, bool on) {
  if (xioctl(devFd, LOOP_SET_DIRECT_IO, static_cast<unsigned long>(on ? 1 : 0)) < 0)
    return ioctlError(errno, "LOOP_SET_DIRECT_IO", devFd);
  return Ok{};
}

Status LinuxLoopKernel::setBlockSize(int devFd, uint32_t size) {
  if (xioctl(devFd, LOOP_SET_BLOCK_SIZE, static_cast<unsigned long>(size)) < 0)
    return ioctlError(errno, "LOOP_SET_BLOCK_SIZE", devFd);
  return Ok{};
}

Result<BackingInfo> LinuxLoopKernel::inspectBacking(int fd) {
  BackingInfo b;
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0) return makeError("backing fd: " + std::string(std::strerror(errno)), errno);
  if (fl & O_PATH) return makeError("backing fd is an O_PATH descriptor", EBADF);
  b.accessMode = fl & O_ACCMODE;
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return makeError("backing fd: fstat: " + std::string(std::strerror(errno)), errno);
  b.isRegular = S_ISREG(st.st_mode);
  b.isBlockDevice = S_ISBLK(st.st_mode);
  b.fsDevice = DevNum{::major(st.st_dev), ::minor(st.st_dev)};
  b.inode = st.st_ino;
  b.size = static_cast<uint64_t>(st.st_size);
  if (b.isBlockDevice) {
    b.rdev = DevNum{::major(st.st_rdev), ::minor(st.st_rdev)};
    uint64_t bytes = 0;
    if (xioctl(fd, BLKGETSIZE64, &bytes) == 0) b.size = bytes;
    int ssz = 0;
    if (xioctl(fd, BLKSSZGET, &ssz) == 0 && ssz > 0)
      b.bdevLogicalBlockSize = static_cast<uint32_t>(ssz);
  } else if (b.fsDevice.major != 0) {
    b.bdevLogicalBlockSize = sysfs_->logicalBlockSize(b.fsDevice);
  }
  struct statfs sfs;
  if (::fstatfs(fd, &sfs) == 0) b.fsMagic = static_cast<uint64_t>(sfs.f_type);
  KStatx sx;
  std::memset(&sx, 0, sizeof sx);
#ifdef SYS_statx
  if (::syscall(SYS_statx, fd, "", AT_EMPTY_PATH, kStatxBasic | STATX_DIOALIGN, &sx) == 0 &&
      (sx.mask & STATX_DIOALIGN)) {
    b.dioAlignKnown = true;
    b.dioOffsetAlign = sx.dioOffsetAlign;
    b.dioMemAlign = sx.dioMemAlign;
  }
#endif
  char buf[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n > 0) b.path.assign(buf, static_cast<size_t>(n));
  return b;
}

void LinuxLoopKernel::sleepFor(std::chrono::milliseconds d) {
  std::this_thread::sleep_for(d);
}

}  // namespace cxiosync
