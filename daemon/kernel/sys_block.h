// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// sysfs block-device adapter (--sys-root, default /sys): names <-> MAJ:MIN, partitions ->
// whole disk, loop -> backing file's device, dm/md -> slaves; builds the DeviceStack the
// planner follows (policy/model/snapshot.h). sysfs is a tree of relative symlinks, so
// reads here follow symlinks (they stay inside the sysfs root).
#include <sys/stat.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/kernel/fs.h"
#include "policy/model/dev_num.h"
#include "policy/model/snapshot.h"
#include "policy/result.h"

namespace cxiosync {

namespace sysfile {
inline constexpr const char* kDevBlock = "dev/block";      // MAJ:MIN -> ../../devices/.../NAME
inline constexpr const char* kClassBlock = "class/block";  // NAME -> ../../devices/.../NAME
inline constexpr const char* kDev = "dev";                 // "8:1\n"
inline constexpr const char* kPartition = "partition";     // present (= index) on partitions
inline constexpr const char* kSlaves = "slaves";           // dm/md lower devices (names)
inline constexpr const char* kLoopBackingFile = "loop/backing_file";
inline constexpr const char* kDmName = "dm/name";
}  // namespace sysfile

inline constexpr const char* kDefaultSysRoot = "/sys";

class SysBlock {
 public:
  // stat(2) of a host path -> st_dev; injectable for tests (loop backing files are host
  // paths, the one place cxiosync stats a path by name).
  using StatDevFn = std::function<Result<DevNum>(const std::string& path)>;

  static Result<std::unique_ptr<SysBlock>> open(const std::string& root = kDefaultSysRoot,
                                                StatDevFn statDev = {});
  SysBlock(UniqueFd rootFd, std::string root, StatDevFn statDev);
  virtual ~SysBlock() = default;

  // "sda1" for 8:1 (basename of the dev/block/MAJ:MIN link). Gone error when unknown.
  Result<std::string> nameOf(const DevNum& dev) const;
  // 8:1 for "sda1" (class/block/NAME/dev).
  Result<DevNum> devOf(const std::string& name) const;
  // All block devices (class/block), sorted by DevNum.
  Result<std::vector<DevNum>> list() const;

  // A partition's whole disk (8:1 -> 8:0); the device itself when it is not a partition.
  Result<DevNum> wholeDisk(const DevNum& dev) const;
  bool isPartition(const DevNum& dev) const;

  // Immediate lower devices, mapped to whole disks (io.max accepts only whole disks):
  // dm/md -> slaves/*, loop -> device of loop/backing_file. Empty for plain disks.
  Result<std::vector<DevNum>> lowerOf(const DevNum& dev) const;
  // Loop backing file path ("(deleted)" suffix stripped); nullopt when not a bound loop.
  Result<std::optional<std::string>> loopBackingFile(const DevNum& dev) const;

  // Every edge of every device (errors on single devices are skipped: devices come and go).
  DeviceStack buildStack() const;

 private:
  std::string devDir(const DevNum& dev) const;  // "dev/block/8:1"
  UniqueFd rootFd_;
  std::string root_;
  StatDevFn statDev_;
};

// Default StatDevFn: stat(path).st_dev; for a block device node, st_rdev (the device
// itself, not devtmpfs's anonymous device).
Result<DevNum> statDevice(const std::string& path);
DevNum devNumFromDevT(dev_t d);

// The block device holding a filesystem, from a file's st_dev: st_dev itself when it has a
// real major; for anonymous devices (major 0: btrfs subvolumes, overlayfs) the mountinfo
// entry with that st_dev whose source is /dev/NAME, resolved through sysfs. The result may
// be a partition: use SysBlock::wholeDisk for io.max.
Result<DevNum> filesystemDevice(const DevNum& stDev, std::string_view mountInfoText,
                                const SysBlock& sys);

}  // namespace cxiosync
