// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Loop devices: the value types shared by the mechanics (loop_kernel.h), the ownership state
// (loop_state.h) and the manager (loop_manager.h). No syscalls here.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/blockdev/loop_vocab.h"
#include "policy/model/dev_num.h"
#include "policy/result.h"

namespace cxiosync {

// DirectIoMode (what the caller asked for about direct I/O): policy/blockdev/loop_vocab.h.

// Where the block size of a new device came from.
enum class BlockSizeSource {
  Caller,       // the caller asked for it
  DioAlign,     // statx(STATX_DIOALIGN) of the backing file (Linux 6.1+ filesystems)
  BackingBdev,  // the logical block size of the backing file's block device
  Probe,        // direct I/O refused at the first size; a larger size made it possible
  Default,      // 512 (buffered, or nothing known about the backing file)
};
const char* blockSizeSourceName(BlockSizeSource s);

// Options of a new loop device. Defaults are cxiosync's defaults (direct I/O auto).
struct LoopOptions {
  bool readOnly = false;
  uint64_t offset = 0;     // bytes into the backing file
  uint64_t sizeLimit = 0;  // bytes; 0 = up to the end of the file
  bool autoclear = false;  // detach on last close (see docs/loop-devices.md: keep an fd!)
  bool partscan = false;
  uint32_t blockSize = 0;  // logical block size; 0 = choose (see chooseBlockSize)
  DirectIoMode directIo = DirectIoMode::Auto;
  // Request depth of the device (queue/nr_requests): how many requests it accepts at once;
  // with direct I/O that many backing I/Os can be in flight (buffered: one at a time per
  // cgroup, whatever the depth). 0 = the kernel's default (the loop module's hw_queue_depth);
  // else 4..hw_queue_depth (checked against the running kernel by LoopManager).
  uint32_t queueDepth = 0;
};

// Checks a caller's options on their own (no backing file needed): block size 0 or a power
// of two in [512, 65536]. EINVAL with a message naming the bad value.
Status validateLoopOptions(const LoopOptions& o);

// Facts about a backing file, from its fd (fstat/statx/fstatfs/fcntl; see loop_kernel.h).
struct BackingInfo {
  int accessMode = 0;  // fcntl(F_GETFL) & O_ACCMODE
  bool isBlockDevice = false;
  bool isRegular = false;
  DevNum fsDevice;             // st_dev: the device of the filesystem holding the file
  std::optional<DevNum> rdev;  // st_rdev when the backing file is itself a block device
  uint64_t inode = 0;
  uint64_t size = 0;            // bytes (block device: its size)
  uint64_t fsMagic = 0;         // statfs f_type
  bool dioAlignKnown = false;   // statx returned STATX_DIOALIGN
  uint32_t dioOffsetAlign = 0;  // 0 with dioAlignKnown: the file does not support direct I/O
  uint32_t dioMemAlign = 0;
  uint32_t bdevLogicalBlockSize = 0;  // of the backing bdev (rdev, else fsDevice), 0 = unknown
  std::string path;                   // readlink(/proc/self/fd/N): for display only, never reopened
};

const char* fsMagicName(uint64_t magic);  // "ext4", "tmpfs", ... or "" when unknown

// The block size a new device gets, and why. Pure.
//   caller's size when given;
//   buffered (Off): 0 -> the kernel's default (512);
//   direct I/O: the backing file's direct-I/O offset alignment (statx), else the backing
//   bdev's logical block size, else 512; clamped to [512, 4096]... never below 512.
struct BlockSizeChoice {
  uint32_t size = 0;  // 0 = leave to the kernel (512)
  BlockSizeSource source = BlockSizeSource::Default;
};
BlockSizeChoice chooseBlockSize(const LoopOptions& o, const BackingInfo& b);

// A reason direct I/O cannot work with these facts, known before asking the kernel ("" when
// none is visible). Pure.
std::string predictDirectIoRefusal(const BackingInfo& b, uint64_t offset, uint32_t blockSize);

// The state of one loop device as sysfs and LOOP_GET_STATUS64 show it.
struct LoopKernelState {
  int index = -1;
  DevNum devnum;            // /sys/block/loopN/dev
  bool bound = false;       // has a backing file (sysfs loop/ present)
  std::string backingFile;  // sysfs loop/backing_file (may end in " (deleted)")
  uint64_t offset = 0;
  uint64_t sizeLimit = 0;
  bool autoclear = false;
  bool partscan = false;
  bool directIo = false;            // loop/dio: the EFFECTIVE state
  bool readOnly = false;            // /sys/block/loopN/ro
  uint32_t logicalBlockSize = 0;    // queue/logical_block_size
  uint64_t sizeBytes = 0;           // size (512-byte sectors) * 512
  uint32_t requestDepth = 0;        // queue/nr_requests
  std::optional<uint64_t> diskseq;  // /sys/block/loopN/diskseq (nullopt before Linux 5.15)
  // From LOOP_GET_STATUS64 (nullopt when the device could not be opened):
  std::optional<DevNum> backingFsDevice;  // lo_device: st_dev of the backing file
  std::optional<uint64_t> backingInode;   // lo_inode
};

// Who probably set up a loop device cxiosync did not create. A guess from the backing path.
enum class ForeignOwner { None, Snap, Systemd, Udisks, Manual };
const char* foreignOwnerName(ForeignOwner o);  // "", "snap", "systemd", "udisks", "manual"
ForeignOwner guessForeignOwner(std::string_view backingFile);

// What cxiosync recorded when it created a device (loop_state.h persists these).
struct LoopRecord {
  int index = -1;
  uint32_t uid = 0;         // the caller that asked for it
  int64_t createdUnix = 0;  // CLOCK_REALTIME seconds
  DevNum backingFsDevice;   // to recognise the device after a restart
  uint64_t backingInode = 0;
  // The device's diskseq right after cxiosync attached it (0 = unknown: a kernel before 5.15,
  // or a record written before 2026-12). The kernel increments it on every attach, so a
  // device detached and attached again by someone else (even to the same file) is not ours.
  uint64_t diskseq = 0;
  std::string backingFile;         // display path at setup time
  LoopOptions options;             // as requested
  std::string backend = "kernel";  // future: "nbd" (issue 9); always "kernel" today
  std::string directIoNote;  // why direct I/O is off although asked for ("" when on/not asked)
  uint32_t blockSizeChosen = 0;
  BlockSizeSource blockSizeSource = BlockSizeSource::Default;
};

// Everything list()/show() report about one device.
struct LoopDeviceInfo {
  std::string name;  // "loop3"
  std::string path;  // "/dev/loop3" (under --dev-root)
  LoopKernelState kernel;
  // The device the loop's I/O is re-issued to: the backing file's filesystem device (a
  // partition possibly), and its whole disk (what io.max accepts). nullopt for backing files
  // without a block device (tmpfs) or when unknown.
  std::optional<DevNum> backingDevice;
  std::optional<DevNum> backingDisk;
  // Ownership / authorization facts.
  bool foreign = true;                             // not created by cxiosync (or no longer ours)
  ForeignOwner foreignOwner = ForeignOwner::None;  // a guess, set when foreign
  std::optional<LoopRecord> record;                // set when ours
  // Concurrency the kernel really has for this device (see daemon/blockdev/backend.h): the loop
  // driver has ONE worker per issuing cgroup (no per-device count), which handles buffered
  // requests one at a time; with direct I/O it submits asynchronously, up to the queue depth.
  int workers = 1;
  uint32_t inFlightMax = 1;  // direct I/O: kernel.requestDepth; buffered: 1
};

// Parses "loop3", "/dev/loop3" or "3" into 3. EINVAL otherwise.
Result<int> parseLoopName(std::string_view text);

}  // namespace cxiosync
