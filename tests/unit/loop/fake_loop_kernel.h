// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// A fake loop driver for LoopManager tests: keeps device state in memory and mirrors it into
// a fake sysfs tree (so the real LoopSysfs reads it), injects EBUSY races, ENOTTY (pre-5.8
// kernels), direct-I/O refusal and busy devices.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/blockdev/loop/loop_kernel.h"

namespace cxiosync::testing {

inline void writeFile(const std::filesystem::path& p, const std::string& s) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << s;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cxiosync-loop-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The backing file most tests attach: a 64 MiB image on ext4 (direct I/O aligned at 4096).
inline BackingInfo ext4ImageBacking() {
  BackingInfo b;
  b.accessMode = O_RDWR;
  b.isRegular = true;
  b.fsDevice = {8, 1};
  b.inode = 77;
  b.size = 64 << 20;
  b.fsMagic = 0xEF53;
  b.dioAlignKnown = true;
  b.dioOffsetAlign = 4096;
  b.bdevLogicalBlockSize = 4096;
  b.path = "/srv/disk.img";
  return b;
}

struct FakeDev {
  bool bound = false;
  std::string backing;
  uint64_t offset = 0, sizeLimit = 0;
  uint32_t flags = 0;
  uint32_t lbs = 512;
  bool dio = false;
  DevNum backingDev;
  uint64_t backingIno = 0;
  uint64_t sizeBytes = 0;
  bool busy = false;  // held open by someone else (mounted)
};

class FakeLoopKernel : public LoopKernel {
 public:
  explicit FakeLoopKernel(std::string root, int nDevices = 4) : root_(std::move(root)) {
    std::filesystem::create_directories(root_ + "/sys/block");
    for (int i = 0; i < nDevices; ++i) {
      devs[i] = FakeDev{};
      sync(i);
    }
    sysfs_ = LoopSysfs::open(root_ + "/sys").value();
  }

  // --- knobs ---
  BackingInfo backing;     // what inspectBacking returns
  int configureErrno = 0;  // LOOP_CONFIGURE fails with this (ENOTTY: old kernel)
  std::function<void(int)> raceBeforeConfigure;  // runs before CONFIGURE/SET_FD on a device
  bool dioWorks = true;                          // the backing file can do direct I/O at all
  uint32_t dioMinBlock = 512;                    // ... with a logical block size at least this
  bool clrFdBusyErrno = false;  // LOOP_CLR_FD answers EBUSY when busy (old kernels)

  // --- observations ---
  std::map<int, FakeDev> devs;
  std::vector<int> cleared;  // indices LOOP_CLR_FD was sent to
  std::vector<std::string> calls;
  int sleeps = 0;

  void sync(int i) {
    namespace fs = std::filesystem;
    const std::string d = root_ + "/sys/block/loop" + std::to_string(i);
    const FakeDev& f = devs[i];
    writeFile(d + "/dev", "7:" + std::to_string(i) + "\n");
    writeFile(d + "/ro", (f.flags & LO_FLAGS_READ_ONLY) ? "1\n" : "0\n");
    writeFile(d + "/size", std::to_string(f.bound ? f.sizeBytes / 512 : 0) + "\n");
    writeFile(d + "/queue/logical_block_size", std::to_string(f.lbs) + "\n");
    writeFile(d + "/queue/nr_requests", "128\n");
    if (f.bound) {
      writeFile(d + "/loop/backing_file", f.backing + "\n");
      writeFile(d + "/loop/offset", std::to_string(f.offset) + "\n");
      writeFile(d + "/loop/sizelimit", std::to_string(f.sizeLimit) + "\n");
      writeFile(d + "/loop/autoclear", (f.flags & LO_FLAGS_AUTOCLEAR) ? "1\n" : "0\n");
      writeFile(d + "/loop/partscan", (f.flags & LO_FLAGS_PARTSCAN) ? "1\n" : "0\n");
      writeFile(d + "/loop/dio", f.dio ? "1\n" : "0\n");
    } else {
      fs::remove_all(d + "/loop");
    }
  }

  // Another process binds device i (e.g. losetup -f won the race).
  void bindForeign(int i, const std::string& path, DevNum dev = {8, 1}, uint64_t ino = 999) {
    FakeDev& f = devs[i];
    f.bound = true;
    f.backing = path;
    f.backingDev = dev;
    f.backingIno = ino;
    f.sizeBytes = 1 << 20;
    sync(i);
  }

  Result<int> getFree() override {
    calls.push_back("GET_FREE");
    for (auto& [i, f] : devs)
      if (!f.bound) return i;
    int n = devs.empty() ? 0 : devs.rbegin()->first + 1;
    devs[n] = FakeDev{};
    sync(n);
    return n;
  }
  Result<UniqueFd> openDevice(int index, bool, bool) override {
    if (!devs.count(index)) return makeError("no such device", ENOENT);
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    fds_[fd] = index;
    return UniqueFd(fd);
  }
  bool dioOk(const FakeDev& f) const { return dioWorks && f.lbs >= dioMinBlock; }
  Status configure(int devFd, const loop_config& c) override {
    int i = fds_.at(devFd);
    calls.push_back("CONFIGURE loop" + std::to_string(i));
    if (raceBeforeConfigure) raceBeforeConfigure(i);
    if (configureErrno) return makeError("LOOP_CONFIGURE", configureErrno);
    FakeDev& f = devs[i];
    if (f.bound) return makeError("LOOP_CONFIGURE: busy", EBUSY);
    bindOurs(f, c.info);
    f.lbs = c.block_size ? c.block_size : 512;
    f.dio = (c.info.lo_flags & LO_FLAGS_DIRECT_IO) && dioOk(f);
    if (!f.dio) f.flags &= ~static_cast<uint32_t>(LO_FLAGS_DIRECT_IO);
    if (backing.accessMode == O_RDONLY) f.flags |= LO_FLAGS_READ_ONLY;
    sync(i);
    return Ok{};
  }
  Status setFd(int devFd, int) override {
    int i = fds_.at(devFd);
    calls.push_back("SET_FD loop" + std::to_string(i));
    if (raceBeforeConfigure) raceBeforeConfigure(i);
    FakeDev& f = devs[i];
    if (f.bound) return makeError("LOOP_SET_FD: busy", EBUSY);
    loop_info64 none{};
    bindOurs(f, none);
    if (backing.accessMode == O_RDONLY) f.flags |= LO_FLAGS_READ_ONLY;
    sync(i);
    return Ok{};
  }
  Status setStatus(int devFd, const loop_info64& info) override {
    int i = fds_.at(devFd);
    calls.push_back("SET_STATUS64 loop" + std::to_string(i));
    FakeDev& f = devs[i];
    if (!f.bound) return makeError("not bound", ENXIO);
    f.offset = info.lo_offset;
    f.sizeLimit = info.lo_sizelimit;
    const uint32_t settable = LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN;
    f.flags = (f.flags & ~settable) | (info.lo_flags & settable);
    sync(i);
    return Ok{};
  }
  Result<LoopStatus64> getStatus(int devFd) override {
    const FakeDev& f = devs[fds_.at(devFd)];
    if (!f.bound) return makeError("not bound", ENXIO);
    LoopStatus64 s;
    s.device = f.backingDev;
    s.inode = f.backingIno;
    s.offset = f.offset;
    s.sizeLimit = f.sizeLimit;
    s.flags = f.flags;
    return s;
  }
  Status clearFd(int devFd) override {
    int i = fds_.at(devFd);
    calls.push_back("CLR_FD loop" + std::to_string(i));
    cleared.push_back(i);
    FakeDev& f = devs[i];
    if (!f.bound) return makeError("not bound", ENXIO);
    if (f.busy) {
      if (clrFdBusyErrno) return makeError("LOOP_CLR_FD: busy", EBUSY);
      f.flags |= LO_FLAGS_AUTOCLEAR;  // what the kernel does: lazy
      sync(i);
      return Ok{};
    }
    f = FakeDev{};
    sync(i);
    return Ok{};
  }
  Status setCapacity(int devFd) override {
    calls.push_back("SET_CAPACITY loop" + std::to_string(fds_.at(devFd)));
    return Ok{};
  }
  Status setDirectIo(int devFd, bool on) override {
    int i = fds_.at(devFd);
    calls.push_back(std::string("SET_DIRECT_IO ") + (on ? "1" : "0") + " loop" + std::to_string(i));
    FakeDev& f = devs[i];
    if (on && !dioOk(f)) return makeError("LOOP_SET_DIRECT_IO", EINVAL);
    f.dio = on;
    sync(i);
    return Ok{};
  }
  Status setBlockSize(int devFd, uint32_t size) override {
    int i = fds_.at(devFd);
    calls.push_back("SET_BLOCK_SIZE " + std::to_string(size) + " loop" + std::to_string(i));
    FakeDev& f = devs[i];
    f.lbs = size;
    if (f.dio && !dioOk(f)) f.dio = false;
    sync(i);
    return Ok{};
  }
  Result<BackingInfo> inspectBacking(int) override { return backing; }
  void sleepFor(std::chrono::milliseconds) override { ++sleeps; }
  const LoopSysfs& sysfs() const override { return *sysfs_; }
  std::string devicePath(int index) const override { return "/dev/loop" + std::to_string(index); }

 private:
  void bindOurs(FakeDev& f, const loop_info64& info) {
    f.bound = true;
    f.backing = backing.path;
    f.backingDev = backing.fsDevice;
    f.backingIno = backing.inode;
    f.sizeBytes = backing.size;
    f.offset = info.lo_offset;
    f.sizeLimit = info.lo_sizelimit;
    f.flags = info.lo_flags;
  }
  std::string root_;
  std::unique_ptr<LoopSysfs> sysfs_;
  std::map<int, int> fds_;
};

}  // namespace cxiosync::testing
