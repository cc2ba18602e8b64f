// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// dbus::LoopBackend over the loop manager (daemon/blockdev/loop/loop_manager.h): the adapter
// between the loop mechanics and the bus boundary, like BusBackend for the Manager interface. Built
// into cxiosync_daemon_bus (daemon/CMakeLists.txt), never into the core.
//
// main() creates it with LoopBus::create(options) before the bus is attached: the manager
// runs reconcile() (drops records of devices that went away while the daemon was down)
// before READY=1, and BusServerOptions::loopBackend points at it.
#include <memory>
#include <string>

#include "daemon/blockdev/loop/loop_manager.h"
#include "dbus/loop_backend.h"

namespace cxiosync {

struct Options;

class LoopBusBackend final : public dbus::LoopBackend {
 public:
  explicit LoopBusBackend(LoopManager& manager) : m_(manager) {}

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
  Result<dbus::LoopDetachOutcome> detach(const std::string& name, uint32_t callerUid,
                                         bool force) override;

  static dbus::LoopInfo toInfo(const LoopDeviceInfo& d);

 private:
  LoopManager& m_;
};

// The loop manager and its adapter, owned by main() for the daemon's lifetime.
class LoopBus {
 public:
  // LoopManager over --dev-root/--sys-root/--run-dir, then reconcile(). Null (after a
  // warning in the log) when loop devices are unusable here: the daemon runs on and the loop
  // calls answer NotSupported.
  static std::unique_ptr<LoopBus> create(const Options& options);
  dbus::LoopBackend* backend() { return &backend_; }
  LoopManager& manager() { return *manager_; }

 private:
  explicit LoopBus(std::unique_ptr<LoopManager> m) : manager_(std::move(m)), backend_(*manager_) {}
  std::unique_ptr<LoopManager> manager_;
  LoopBusBackend backend_;
};

}  // namespace cxiosync
