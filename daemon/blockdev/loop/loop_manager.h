// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// LoopManager: sets up, lists, changes and detaches kernel loop devices, and remembers which
// ones cxiosync created (loop_state.h). The D-Bus layer (org.cxiosync1.Loop) and the
// cxiosync-loop development tool call this; it makes no authorization decisions beyond one
// safety rule it always enforces:
//
//   A device cxiosync did not create ("foreign": snapd's, systemd's, udisks', a manual
//   losetup) is never changed, except by uid 0 with force = true  -> EPERM otherwise.
//
// The bus layer must, before calling a mutation, look at loopAccess(): devices cxiosync
// created for another uid need polkit org.cxiosync1.loop-modify-others / loop-delete-others.
//
// Errors are values with an errno: EINVAL (bad options, direct I/O refused with
// direct_io=on), ENOENT (no such loop device / not bound), EPERM (foreign), EBADF (backing fd
// not readable), EBUSY/EAGAIN (gave up after the retry budget), ETIMEDOUT (device node).
// Single-threaded: call from the daemon's loop thread only.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/blockdev/loop/loop_kernel.h"
#include "daemon/blockdev/loop/loop_state.h"
#include "daemon/blockdev/loop_types.h"
#include "daemon/kernel/fs.h"

namespace cxiosync {

struct LoopManagerOptions {
  std::string runDir = kDefaultRunDir;        // --run-dir: loops.json lives here
  std::string devRoot = kDefaultDevRoot;      // --dev-root
  std::string sysRoot = kDefaultLoopSysRoot;  // --sys-root
  // Rounds of GET_FREE + CONFIGURE when another process takes the free device first
  // (EBUSY) or the kernel says EAGAIN; util-linux uses 64.
  int maxAttempts = 64;
  std::chrono::milliseconds retryDelay{25};
  std::chrono::milliseconds nodeTimeout{2000};
  // How long a detach waits for the kernel to finish tearing a device down.
  std::chrono::milliseconds detachWait{1000};
  std::function<int64_t()> now;  // CLOCK_REALTIME seconds; default time(nullptr)
};

struct LoopSetupResult {
  LoopDeviceInfo device;  // effective state read back from sysfs after setup
  // The open device. Closing it is harmless, EXCEPT with autoclear: the kernel detaches an
  // autoclear device on its last close, so hand this fd to the caller (D-Bus "h") or keep it
  // until something else (a mount) holds the device.
  UniqueFd deviceFd;
  bool usedLoopConfigure = true;  // false: LOOP_SET_FD + LOOP_SET_STATUS64 (pre-5.8 kernel)
  int attempts = 1;               // GET_FREE rounds (races with other loop users)
  bool directIoRequested = false;
  bool directIoEffective = false;  // /sys/block/loopN/loop/dio after setup
  std::string directIoNote;        // why it is off although requested ("" otherwise)
  uint32_t blockSize = 0;          // effective logical block size
  BlockSizeSource blockSizeSource = BlockSizeSource::Default;
  std::vector<std::string> notes;  // other things the caller should know
};

struct LoopDetachResult {
  std::string name;
  bool detached = false;  // the device has no backing file any more
  bool lazy = false;      // still in use: autoclear set, detaches on its last close
  std::string note;
};

// What a caller may do to an existing device (the manager enforces only Refused).
enum class LoopAccess {
  Allowed,                   // created by cxiosync for this caller
  NeedsOthersAuthorization,  // created by cxiosync for another uid: polkit *-others
  Refused,                   // foreign, and not (uid 0 with force)
};
LoopAccess loopAccess(const LoopDeviceInfo& d, uint32_t callerUid, bool force);
const char* loopAccessName(LoopAccess a);

class LoopManager {
 public:
  // The real kernel below o.devRoot / o.sysRoot.
  static Result<std::unique_ptr<LoopManager>> create(const LoopManagerOptions& o);
  LoopManager(std::unique_ptr<LoopKernel> kernel, LoopManagerOptions o);

  // Startup: drop records of devices that are gone or now belong to someone else; saves.
  Result<ReconcileResult> reconcile();

  // A new device backed by the caller's fd (opened by the caller: its rights count; a
  // read-only fd gives a read-only device). The fd is not closed or reopened.
  Result<LoopSetupResult> setup(int backingFd, const LoopOptions& options, uint32_t callerUid);
  // The same with the options already validated (validateLoopOptions) and the fd already
  // inspected (LoopKernel::inspectBacking) by the caller: BlockDevices::setup does both once.
  Result<LoopSetupResult> setup(int backingFd, const BackingInfo& backing,
                                const LoopOptions& options, uint32_t callerUid);

  // Every bound loop device; foreign ones only with includeForeign.
  Result<std::vector<LoopDeviceInfo>> list(bool includeForeign = true);
  // "loop3", "/dev/loop3" or "3". ENOENT when it does not exist or is not bound.
  Result<LoopDeviceInfo> show(std::string_view dev);

  // Live changes; each returns the state read back afterwards.
  // setDirectIO(on): EINVAL with the reason when the kernel refuses.
  Result<LoopDeviceInfo> setDirectIO(std::string_view dev, bool on, uint32_t callerUid,
                                     bool force = false);
  Result<LoopDeviceInfo> setBlockSize(std::string_view dev, uint32_t size, uint32_t callerUid,
                                      bool force = false);
  // queue/nr_requests: 4..the loop module's hw_queue_depth; EINVAL (with the bound) otherwise.
  Result<LoopDeviceInfo> setQueueDepth(std::string_view dev, uint32_t depth, uint32_t callerUid,
                                       bool force = false);
  // Re-reads the backing file's size (after the file grew or shrank).
  Result<LoopDeviceInfo> setCapacity(std::string_view dev, uint32_t callerUid, bool force = false);
  // With on and nobody else holding the device, the kernel detaches it right away: the
  // result then has kernel.bound == false.
  Result<LoopDeviceInfo> setAutoclear(std::string_view dev, bool on, uint32_t callerUid,
                                      bool force = false);
  // LOOP_CLR_FD. A device still in use (mounted, held open) is detached lazily: the kernel
  // (or we, on EBUSY) sets autoclear and it goes away on its last close: lazy = true.
  Result<LoopDetachResult> detach(std::string_view dev, uint32_t callerUid, bool force = false);

  const LoopManagerOptions& options() const { return opts_; }
  LoopKernel& kernel() { return *kernel_; }

 private:
  struct Target {
    int index = -1;
    LoopDeviceInfo info;
  };
  Result<Target> mutable_(std::string_view dev, uint32_t callerUid, bool force);
  Result<LoopDeviceInfo> info(int index, const std::vector<LoopRecord>& records);
  Result<std::vector<LoopRecord>> loadRecords();
  Status updateRecords(const std::function<void(std::vector<LoopRecord>&)>& change);
  // Clears a device we bound ourselves and waits until the kernel reports it unbound.
  void teardown(int index, UniqueFd devFd);
  bool waitUnbound(int index);
  std::string explainRefusal(const BackingInfo& b, const LoopOptions& o, uint32_t blockSize);

  // setup()'s steps after the checks, in order. Every step that fails once the device is
  // ours tears it down (teardown) before returning the error.
  struct Bound {
    int index = -1;
    UniqueFd dev;
    UniqueFd lock;  // the BSD lock on the node until setup is done (udev must not probe)
  };
  // GET_FREE, open, bind; another round when another loop user takes the device first.
  Result<Bound> bindFree(const loop_config& cfg, const LoopOptions& o, LoopSetupResult& res);
  // LOOP_CONFIGURE, or (pre-5.8, or EINVAL) LOOP_SET_FD + LOOP_SET_STATUS64. false: lost
  // the device to a race (`last` says how), take another.
  Result<bool> bind(Bound& d, const loop_config& cfg, LoopSetupResult& res, Error& last);
  Result<LoopKernelState> readBack(Bound& d, const LoopOptions& o);
  // Direct I/O asked for but off after setup: a 4096-byte block size once, else the reason.
  Status settleDirectIo(Bound& d, const BackingInfo& b, const LoopOptions& o, BlockSizeChoice& bs,
                        LoopKernelState& st, LoopSetupResult& res);
  Status applyQueueDepth(Bound& d, const LoopOptions& o, LoopKernelState& st, LoopSetupResult& res);
  Status recordOwner(Bound& d, const LoopRecord& rec);

  std::unique_ptr<LoopKernel> kernel_;
  LoopManagerOptions opts_;
  LoopStateStore store_;
  bool noLoopConfigure_ = false;  // kernel answered ENOTTY once: pre-5.8
};

}  // namespace cxiosync
