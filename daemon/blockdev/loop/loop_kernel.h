// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The loop driver's userspace interface, behind a small virtual class so the manager's
// state machine (races, EBUSY, fallbacks) can be tested with a fake that injects errors.
//
//   /dev/loop-control  LOOP_CTL_GET_FREE (0x4C82)
//   /dev/loopN         LOOP_CONFIGURE (0x4C0A, Linux 5.8+: fd + status + block size + direct
//                      I/O in one call), LOOP_SET_FD/LOOP_SET_STATUS64 (older kernels),
//                      LOOP_GET_STATUS64, LOOP_CLR_FD, LOOP_SET_CAPACITY,
//                      LOOP_SET_DIRECT_IO (0x4C08), LOOP_SET_BLOCK_SIZE (0x4C09)
//   /sys/block/loopN/  dev, ro, size, loop/{backing_file,offset,sizelimit,autoclear,partscan,
//                      dio}, queue/{logical_block_size,nr_requests}
//
// 0x4C0A is LOOP_CONFIGURE on every real kernel. (An out-of-tree 2020 patch used the same
// number for "LOOP_SET_WORKERS"; this code never sends it with any other meaning.)
#include <linux/loop.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/blockdev/loop_types.h"
#include "daemon/kernel/device_lock.h"
#include "daemon/kernel/fs.h"

namespace cxiosync {

static_assert(LOOP_CONFIGURE == 0x4C0A, "LOOP_CONFIGURE is 0x4C0A");
static_assert(LOOP_SET_DIRECT_IO == 0x4C08 && LOOP_SET_BLOCK_SIZE == 0x4C09);
static_assert(LOOP_CTL_GET_FREE == 0x4C82);

namespace loopfile {
inline constexpr const char* kLoopControl = "loop-control";  // under --dev-root
inline constexpr const char* kSysBlock = "block";            // under --sys-root
inline constexpr const char* kDev = "dev";
inline constexpr const char* kRo = "ro";
inline constexpr const char* kSize = "size";
inline constexpr const char* kLoopDir = "loop";
inline constexpr const char* kBackingFile = "loop/backing_file";
inline constexpr const char* kOffset = "loop/offset";
inline constexpr const char* kSizeLimit = "loop/sizelimit";
inline constexpr const char* kAutoclear = "loop/autoclear";
inline constexpr const char* kPartscan = "loop/partscan";
inline constexpr const char* kDio = "loop/dio";
inline constexpr const char* kLogicalBlockSize = "queue/logical_block_size";
inline constexpr const char* kNrRequests = "queue/nr_requests";
// Linux 5.15+: a number the kernel increments on every attach (and detach) of the device.
inline constexpr const char* kDiskseq = "diskseq";
inline constexpr const char* kDevBlock = "dev/block";  // MAJ:MIN -> device dir
inline constexpr const char* kPartition = "partition";
}  // namespace loopfile

inline constexpr const char* kDefaultDevRoot = "/dev";
inline constexpr const char* kDefaultLoopSysRoot = "/sys";

// Reads loop state from sysfs below an injectable root. Unit tests point it at a fake tree.
class LoopSysfs {
 public:
  static Result<std::unique_ptr<LoopSysfs>> open(const std::string& sysRoot);
  LoopSysfs(UniqueFd rootFd, std::string root)
      : rootFd_(std::move(rootFd)), root_(std::move(root)) {}

  // Indices of every loop device the kernel has (bound or not), sorted.
  Result<std::vector<int>> listIndices() const;
  // The sysfs part of LoopKernelState (backingFsDevice/backingInode left unset). ENOENT when
  // the device does not exist; bound=false when it has no backing file.
  Result<LoopKernelState> read(int index) const;
  // Logical block size of a block device by number (partitions: their disk's), 0 if unknown.
  uint32_t logicalBlockSize(const DevNum& dev) const;
  // A partition's whole disk; the device itself otherwise (or when sysfs does not know it).
  DevNum wholeDisk(const DevNum& dev) const;
  const std::string& root() const { return root_; }

 private:
  UniqueFd rootFd_;
  std::string root_;
};

// What LOOP_GET_STATUS64 says (the fields cxiosync uses).
struct LoopStatus64 {
  DevNum device;  // lo_device: st_dev of the backing file
  uint64_t inode = 0;
  DevNum rdevice;  // lo_rdevice
  uint64_t offset = 0;
  uint64_t sizeLimit = 0;
  uint32_t flags = 0;  // LO_FLAGS_*
};

// Every call returns an Error whose code is the errno (the manager decides on EBUSY,
// EAGAIN, ENOTTY, EINVAL).
class LoopKernel {
 public:
  virtual ~LoopKernel() = default;
  virtual Result<int> getFree() = 0;  // LOOP_CTL_GET_FREE
  // Opens /dev/loopN (O_RDWR, or O_RDONLY when !writable). With waitForNode, waits for the
  // node to appear (udev/devtmpfs may be late) and may fall back to a private node.
  virtual Result<UniqueFd> openDevice(int index, bool writable, bool waitForNode) = 0;
  // The BSD lock held while configuring (daemon/kernel/device_lock.h). EWOULDBLOCK: someone
  // else is configuring (or udev probing) the device: take another. The default (fakes)
  // takes none.
  virtual Result<UniqueFd> lockDevice(int devFd) {
    (void)devFd;
    return UniqueFd();
  }
  virtual Status configure(int devFd, const loop_config& config) = 0;
  virtual Status setFd(int devFd, int backingFd) = 0;
  virtual Status setStatus(int devFd, const loop_info64& info) = 0;
  virtual Result<LoopStatus64> getStatus(int devFd) = 0;
  virtual Status clearFd(int devFd) = 0;
  virtual Status setCapacity(int devFd) = 0;
  virtual Status setDirectIo(int devFd, bool on) = 0;
  virtual Status setBlockSize(int devFd, uint32_t size) = 0;
  // Facts about a caller's backing fd (never reopens it by path).
  virtual Result<BackingInfo> inspectBacking(int backingFd) = 0;
  virtual void sleepFor(std::chrono::milliseconds d) = 0;
  virtual const LoopSysfs& sysfs() const = 0;
  virtual std::string devicePath(int index) const = 0;  // "/dev/loop3" under the dev root
};

struct LinuxLoopKernelOptions {
  std::string devRoot = kDefaultDevRoot;
  std::string sysRoot = kDefaultLoopSysRoot;
  // Where a private, immediately unlinked node is made when /dev/loopN does not appear in
  // time (containers with a static /dev). Empty: no fallback.
  std::string privateNodeDir;
  std::chrono::milliseconds nodeTimeout{2000};
};

// The real thing. Not thread-safe (the daemon has one thread).
class LinuxLoopKernel : public LoopKernel {
 public:
  static Result<std::unique_ptr<LinuxLoopKernel>> open(const LinuxLoopKernelOptions& o);

  Result<int> getFree() override;
  Result<UniqueFd> openDevice(int index, bool writable, bool waitForNode) override;
  Result<UniqueFd> lockDevice(int devFd) override;
  Status configure(int devFd, const loop_config& config) override;
  Status setFd(int devFd, int backingFd) override;
  Status setStatus(int devFd, const loop_info64& info) override;
  Result<LoopStatus64> getStatus(int devFd) override;
  Status clearFd(int devFd) override;
  Status setCapacity(int devFd) override;
  Status setDirectIo(int devFd, bool on) override;
  Status setBlockSize(int devFd, uint32_t size) override;
  Result<BackingInfo> inspectBacking(int backingFd) override;
  void sleepFor(std::chrono::milliseconds d) override;
  const LoopSysfs& sysfs() const override { return *sysfs_; }
  std::string devicePath(int index) const override;

  // Whether the last openDevice() had to use a private node.
  bool usedPrivateNode() const { return usedPrivateNode_; }

 private:
  LinuxLoopKernel(LinuxLoopKernelOptions o, std::unique_ptr<LoopSysfs> sysfs)
      : opts_(std::move(o)), sysfs_(std::move(sysfs)) {}
  LinuxLoopKernelOptions opts_;
  std::unique_ptr<LoopSysfs> sysfs_;
  bool usedPrivateNode_ = false;
};

}  // namespace cxiosync
