// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Block-device backends behind one interface: what serves the I/O of a device cxiosync
// sets up from a backing file.
//
//   kernel  the kernel loop driver (/dev/loopN, LoopManager). Concurrency the kernel really
//           has: ONE worker per issuing cgroup (since 5.14), which handles buffered requests
//           one at a time; with direct I/O it submits asynchronously, so up to `queue depth`
//           requests (/sys/block/loopN/queue/nr_requests, at most the loop module's
//           hw_queue_depth) are in flight. No worker-count knob exists in mainline.
//   nbd     the kernel nbd driver in multi-connection mode, served by cxiosync-nbd-server
//           with N worker threads (daemon/blockdev/nbd/): N backing I/Os in flight, also for
//           buffered backing. Worker count fixed at setup (changing it needs a reconnect).
//   ublk    (/dev/ublk-control, Linux 6.0+ with ublk_drv) detected and reported; no backend
//           yet (Debian 6.1 does not build ublk_drv).
//
// The `auto` rule (chooseBackend): the kernel loop, unless more than one worker was asked
// for AND direct I/O is impossible (predicted from the backing file) or unwanted
// (direct_io=off) -> nbd. With direct I/O the kernel loop already keeps many requests in
// flight, which measured as fast as N workers (docs/loop-devices.md, "Workers").
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/blockdev/loop_types.h"
#include "policy/blockdev/block_device.h"
#include "policy/blockdev/loop_vocab.h"
#include "policy/result.h"

namespace cxiosync {

// BackendKind, kMaxLoopWorkers, kMinQueueDepth: policy/blockdev/loop_vocab.h.
Status validateWorkers(int64_t n);
// Decimal only ("4"); "0", "17", "-1", "four", "4x", "" -> EINVAL with a clear message.
Result<int> parseWorkers(std::string_view text);

// Request depth of a kernel loop device: kMinQueueDepth .. the loop module's hw_queue_depth
// (default 128; the tag set's size).
Status validateQueueDepth(int64_t n, uint32_t hwQueueDepth);
Result<uint32_t> parseQueueDepth(std::string_view text, uint32_t hwQueueDepth);

// What the running kernel offers.
struct BackendAvailability {
  bool loop = false;  // /dev/loop-control
  std::string loopNote;
  bool nbd = false;        // loaded (/sys/module/nbd) or loadable (modules.dep/builtin)
  bool nbdLoaded = false;  // /sys/module/nbd
  std::string nbdNote;
  bool ublk = false;  // /dev/ublk-control
  std::string ublkNote;
  uint32_t loopHwQueueDepth = 0;  // /sys/module/loop/parameters/hw_queue_depth (0 unknown)
};
// roots: "/sys", "/dev", "/lib/modules/$(uname -r)" (empty: from uname).
BackendAvailability detectBackends(const std::string& sysRoot = "/sys",
                                   const std::string& devRoot = "/dev",
                                   const std::string& modulesDir = "");

struct BackendChoice {
  BackendKind kind = BackendKind::Kernel;
  std::string reason;  // why (for the reply / logs)
};
// requested: kernel|nbd|auto; workers: 0 = not asked, else validated 1..max;
// dioPossibleWhy: "" when direct I/O looks possible, else the reason it is not.
// Errors (EINVAL/ENOTSUP): kernel with workers > 1 (the kernel loop has no worker count:
// the message says what to use instead); nbd asked or chosen but not available.
Result<BackendChoice> chooseBackend(BackendKind requested, int workers, DirectIoMode dio,
                                    const std::string& dioImpossibleWhy,
                                    const BackendAvailability& avail);

// Kernel-loop request depth through sysfs below sysRoot ("/sys"): queue/nr_requests of
// block device `name` ("loop3").
Result<uint32_t> readQueueDepth(const std::string& sysRoot, const std::string& name);
Status writeQueueDepth(const std::string& sysRoot, const std::string& name, uint32_t depth);
uint32_t loopHwQueueDepth(const std::string& sysRoot);  // 0 = unknown

// One device of any backend: policy/blockdev/block_device.h (the one model, also on the bus).
using BlockDeviceInfo = BlockDevice;

}  // namespace cxiosync
