// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/dbus/hung_fuse.h"

#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace cxiosync::bustest {

namespace {

constexpr uint64_t kRoot = FUSE_ROOT_ID;
constexpr uint64_t kImg = 2;
constexpr uint64_t kImgSize = 1 << 20;
constexpr uint32_t kMaxWrite = 64 * 1024;
constexpr size_t kBufSize = kMaxWrite + 64 * 1024;  // > FUSE_MIN_READ_BUFFER (8192)

bool fuseKnown() {
  std::ifstream in("/proc/filesystems");
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() >= 5 && line.compare(line.size() - 5, 5, "\tfuse") == 0) return true;
  }
  return false;
}

fuse_attr attrOf(uint64_t node) {
  fuse_attr a{};
  a.ino = node;
  a.nlink = node == kRoot ? 2 : 1;
  a.mode = node == kRoot ? (S_IFDIR | 0755) : (S_IFREG | 0644);
  a.size = node == kRoot ? 0 : kImgSize;
  a.blocks = a.size / 512;
  a.blksize = 4096;
  return a;
}

}  // namespace

std::string HungFuse::mount(const std::string& dir) {
  if (!fuseKnown()) (void)std::system("modprobe fuse >/dev/null 2>&1");
  if (!fuseKnown()) return "no fuse file system type in this kernel";
  fd_ = ::open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) return "/dev/fuse: " + std::string(std::strerror(errno));
  const std::string opts =
      "fd=" + std::to_string(fd_) + ",rootmode=40000,user_id=0,group_id=0,allow_other";
  if (::mount("cxiosync-hung", dir.c_str(), "fuse", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
    std::string why = "mount fuse: " + std::string(std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
    return why;
  }
  dir_ = dir;
  thread_ = std::thread([this] { serve(); });
  return {};
}

void HungFuse::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  // Unmount first (lazily: a hung request keeps it busy), then closing the last /dev/fuse fd
  // aborts the connection and fails every request still waiting.
  if (!dir_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
  dir_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void HungFuse::serve() {
  std::vector<char> buf(kBufSize);
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n < 0) {
      // ENOENT: the request was interrupted before we read it.
      if (errno == EINTR || errno == EAGAIN || errno == ENOENT) continue;
      return;  // ENODEV: unmounted
    }
    if (static_cast<size_t>(n) >= sizeof(fuse_in_header))
      handle(buf.data(), static_cast<size_t>(n));
  }
}

bool HungFuse::fromHungProcess(uint32_t pid) const {
  const pid_t want = hangPid_;
  if (want <= 0) return false;
  // The request names the calling thread; its process is the Tgid.
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Tgid:", 0) == 0) return std::atoi(line.c_str() + 5) == want;
  }
  return false;
}

void HungFuse::reply(uint64_t unique, int error, const void* data, size_t size) {
  std::vector<char> out(sizeof(fuse_out_header) + size);
  fuse_out_header h{};
  h.len = static_cast<uint32_t>(out.size());
  h.error = error;
  h.unique = unique;
  std::memcpy(out.data(), &h, sizeof h);
  if (size) std::memcpy(out.data() + sizeof h, data, size);
  (void)::write(fd_, out.data(), out.size());
}

void HungFuse::handle(const char* buf, size_t len) {
  fuse_in_header in;
  std::memcpy(&in, buf, sizeof in);
  const char* arg = buf + sizeof in;
  const size_t argLen = len - sizeof in;
  switch (in.opcode) {
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:
    case FUSE_DESTROY:
      return;  // no reply expected
    default:
      break;
  }
  if (in.opcode != FUSE_INIT && in.opcode != FUSE_RELEASE && in.opcode != FUSE_FLUSH &&
      fromHungProcess(in.pid)) {
    ++hung_;
    return;
  }
  switch (in.opcode) {
    case FUSE_INIT: {
      fuse_init_in ii{};
      std::memcpy(&ii, arg, std::min(argLen, sizeof ii));
      fuse_init_out o{};
      o.major = FUSE_KERNEL_VERSION;
      o.minor = std::min<uint32_t>(ii.minor, FUSE_KERNEL_MINOR_VERSION);
      o.max_readahead = ii.max_readahead;
      o.max_background = 16;
      o.congestion_threshold = 12;
      o.max_write = kMaxWrite;
      o.time_gran = 1;
      return reply(in.unique, 0, &o, sizeof o);
    }
    case FUSE_LOOKUP: {
      if (in.nodeid != kRoot || std::string(arg, strnlen(arg, argLen)) != "img")
        return reply(in.unique, -ENOENT, nullptr, 0);
      fuse_entry_out e{};
      e.nodeid = kImg;
      e.generation = 1;
      e.attr = attrOf(kImg);  // entry_valid = attr_valid = 0: every stat asks again
      return reply(in.unique, 0, &e, sizeof e);
    }
    case FUSE_GETATTR: {
      fuse_attr_out a{};
      a.attr = attrOf(in.nodeid == kImg ? kImg : kRoot);
      return reply(in.unique, 0, &a, sizeof a);
    }
    case FUSE_OPEN:
    case FUSE_OPENDIR: {
      fuse_open_out o{};
      o.fh = 1;
      return reply(in.unique, 0, &o, sizeof o);
    }
    case FUSE_READ: {
      fuse_read_in r{};
      std::memcpy(&r, arg, std::min(argLen, sizeof r));
      uint64_t n = r.offset >= kImgSize ? 0 : std::min<uint64_t>(r.size, kImgSize - r.offset);
      std::vector<char> zeros(std::min<uint64_t>(n, kMaxWrite));
      return reply(in.unique, 0, zeros.data(), zeros.size());
    }
    case FUSE_STATFS: {
      fuse_statfs_out s{};
      s.st.bsize = s.st.frsize = 4096;
      s.st.namelen = 255;
      return reply(in.unique, 0, &s, sizeof s);
    }
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
    case FUSE_FLUSH:
      return reply(in.unique, 0, nullptr, 0);
    default:
      return reply(in.unique, -ENOSYS, nullptr, 0);
  }
}

}  // namespace cxiosync::bustest
