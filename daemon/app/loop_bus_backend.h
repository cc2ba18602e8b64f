// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// dbus::LoopBackend over BlockDevices (daemon/blockdev/devices/backend_devices.h: the kernel
// loop manager and the nbd backend, the same code the cxiosync-loop tool drives): a thin
// mapper between the block-device front door and the bus boundary, like BusBackend for the
// Manager interface. Both sides use the one device model (policy/blockdev/block_device.h). Kernel
// loop devices are loopN objects, nbd devices nbdN objects. Built into cxiosync_daemon_bus
// (daemon/CMakeLists.txt), never into the core.
//
// main() creates it with LoopBus::create(options) before the bus is attached: the manager
// runs reconcile() (drops records of devices that went away while the daemon was down)
// before READY=1, and BusServerOptions::loopBackend points at it.
#include <memory>
#include <string>

#include "daemon/blockdev/devices/backend_devices.h"
#include "dbus/loop_backend.h"

namespace cxiosync {

struct Options;

class LoopBusBackend final : public dbus::LoopBackend {
 public:
  explicit LoopBusBackend(BlockDevices& devices) : d_(devices) {}

  Result<dbus::LoopSetupOutcome> setup(int backingFd, const dbus::LoopSetupOptions& options,
                                       uint32_t callerUid) override;
  Result<std::vector<dbus::LoopInfo>> list(bool includeForeign) override;
  Result<dbus::LoopInfo> show(const std::string& name) override;
  dbus::LoopAccessKind access(const dbus::LoopInfo& device, uint32_t callerUid,
                              bool force) override;
  Result<dbus::LoopInfo> setDirectIO(const std::string& name, bool on, uint32_t callerUid,
                                     bool force) override;
  Result<dbus::LoopInfo> setBlockSize(const std::string& name, uint32_t size, uint32_t callerUid,
                                      bool force) override;
  Result<dbus::LoopInfo> setCapacity(const std::string& name, uint32_t callerUid,
                                     bool force) override;
  Result<dbus::LoopInfo> setAutoclear(const std::string& name, bool on, uint32_t callerUid,
                                      bool force) override;
  Result<dbus::LoopInfo> setWorkers(const std::string& name, uint32_t workers, uint32_t callerUid,
                                    bool force) override;
  Result<dbus::LoopInfo> setQueueDepth(const std::string& name, uint32_t depth, uint32_t callerUid,
                                       bool force) override;
  Result<dbus::LoopDetachOutcome> detach(const std::string& name, uint32_t callerUid,
                                         bool force) override;

 private:
  BlockDevices& d_;  // the one front door; dbus::LoopInfo is its device type
};

// The caller's handle on a new device (LoopSetup's device_fd). uid 0: a READ-ONLY handle on
// the device (enough to keep an autoclear device alive), reopened through /proc/self/fd so that
// a private node that was already unlinked works too, else by `path`, else `dev` itself (root
// could open the node read-write anyway). Any other caller: /dev/null, never a handle on the
// device (issue 26: a device fd outlives the caller's ownership of the device).
Result<dbus::OwnedFd> loopCallerHandle(UniqueFd dev, const std::string& path, uint32_t uid);

// The block devices (kernel loop + nbd) and their adapter, owned by main() for the daemon's
// lifetime.
class LoopBus {
 public:
  // LoopManager over --dev-root/--sys-root/--run-dir, then reconcile(). Null (after a
  // warning in the log) when loop devices are unusable here: the daemon runs on and the loop
  // calls answer NotSupported.
  static std::unique_ptr<LoopBus> create(const Options& options);
  dbus::LoopBackend* backend() { return &backend_; }
  LoopManager& manager() { return devices_->loopManager(); }

 private:
  explicit LoopBus(std::unique_ptr<BlockDevices> d) : devices_(std::move(d)), backend_(*devices_) {}
  std::unique_ptr<BlockDevices> devices_;
  LoopBusBackend backend_;
};

}  // namespace cxiosync
