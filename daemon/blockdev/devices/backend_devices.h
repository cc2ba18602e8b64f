// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// BlockDevices: one entry point over every block-device backend (backend.h). It chooses the
// backend of a new device (the auto rule), routes changes by device name (loopN -> the
// kernel loop backend, nbdN -> the nbd backend), and lists them together. The D-Bus Loop
// interface (Workers, Backend, QueueDepth properties) and the cxiosync-loop tool call this.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/blockdev/backend.h"
#include "daemon/blockdev/loop/loop_manager.h"
#include "daemon/blockdev/nbd/nbd_manager.h"

namespace cxiosync {

struct BlockSetupOptions {
  LoopOptions loop;  // read-only, offset, size, block size, direct I/O...
  int workers = 0;   // 0 = not asked (1)
  BackendKind backend = BackendKind::Auto;
  uint32_t queueDepth = 0;  // kernel loop: nr_requests; 0 = leave the default
  uint32_t nbdTimeoutSec = nbd::kDefaultTimeoutSec;
  // nbd: the server's cgroup (nbd_cgroup.h) and the caller's process for "caller".
  nbd::ServerCgroup serverCgroup = nbd::ServerCgroup::Default;
  pid_t callerPid = 0;
};

struct BlockSetupResult {
  BlockDeviceInfo device;
  BackendChoice choice;
  std::vector<std::string> notes;
  UniqueFd deviceFd;  // kernel loop with autoclear: keep it (see LoopSetupResult)
};

// The interface every backend implements.
class BlockBackend {
 public:
  virtual ~BlockBackend() = default;
  virtual BackendKind kind() const = 0;
  virtual bool handles(std::string_view dev) const = 0;  // by name
  virtual Result<BlockSetupResult> setup(int backingFd, const BlockSetupOptions& o,
                                         uint32_t uid) = 0;
  virtual Result<std::vector<BlockDeviceInfo>> list(bool includeForeign) = 0;
  virtual Result<BlockDeviceInfo> show(std::string_view dev) = 0;
  // ENOTSUP with the reason when the backend cannot change it on a live device.
  virtual Result<BlockDeviceInfo> setWorkers(std::string_view dev, int workers, uint32_t uid,
                                             bool force) = 0;
  virtual Result<BlockDeviceInfo> setQueueDepth(std::string_view dev, uint32_t depth, uint32_t uid,
                                                bool force) = 0;
  // Returns a note ("" when detached at once).
  virtual Result<std::string> detach(std::string_view dev, uint32_t uid, bool force) = 0;
};

// Kernel loop devices through LoopManager (+ queue depth through sysfs).
class KernelLoopBackend : public BlockBackend {
 public:
  KernelLoopBackend(LoopManager& m, std::string sysRoot) : m_(m), sysRoot_(std::move(sysRoot)) {}
  BackendKind kind() const override { return BackendKind::Kernel; }
  bool handles(std::string_view dev) const override;
  Result<BlockSetupResult> setup(int backingFd, const BlockSetupOptions& o, uint32_t uid) override;
  Result<std::vector<BlockDeviceInfo>> list(bool includeForeign) override;
  Result<BlockDeviceInfo> show(std::string_view dev) override;
  Result<BlockDeviceInfo> setWorkers(std::string_view dev, int workers, uint32_t uid,
                                     bool force) override;
  Result<BlockDeviceInfo> setQueueDepth(std::string_view dev, uint32_t depth, uint32_t uid,
                                        bool force) override;
  Result<std::string> detach(std::string_view dev, uint32_t uid, bool force) override;
  static BlockDeviceInfo toInfo(const LoopDeviceInfo& d);

 private:
  LoopManager& m_;
  std::string sysRoot_;
};

class NbdBackend : public BlockBackend {
 public:
  explicit NbdBackend(NbdManager& m) : m_(m) {}
  BackendKind kind() const override { return BackendKind::Nbd; }
  bool handles(std::string_view dev) const override;
  Result<BlockSetupResult> setup(int backingFd, const BlockSetupOptions& o, uint32_t uid) override;
  Result<std::vector<BlockDeviceInfo>> list(bool includeForeign) override;
  Result<BlockDeviceInfo> show(std::string_view dev) override;
  Result<BlockDeviceInfo> setWorkers(std::string_view dev, int workers, uint32_t uid,
                                     bool force) override;
  Result<BlockDeviceInfo> setQueueDepth(std::string_view dev, uint32_t depth, uint32_t uid,
                                        bool force) override;
  Result<std::string> detach(std::string_view dev, uint32_t uid, bool force) override;

 private:
  NbdManager& m_;
};

class BlockDevices {
 public:
  struct Options {
    LoopManagerOptions loop;
    std::string serverPath;  // cxiosync-nbd-server; "" = default
  };
  static Result<std::unique_ptr<BlockDevices>> create(const Options& o);
  BlockDevices(std::unique_ptr<LoopManager> loop, std::unique_ptr<NbdManager> nbd,
               BackendAvailability avail, std::string sysRoot);

  const BackendAvailability& availability() const { return avail_; }
  LoopManager& loopManager() { return *loop_; }
  NbdManager& nbdManager() { return *nbd_; }
  // Chooses the backend (chooseBackend) and sets the device up.
  Result<BlockSetupResult> setup(int backingFd, const BlockSetupOptions& o, uint32_t uid);
  Result<std::vector<BlockDeviceInfo>> list(bool includeForeign);
  Result<BlockDeviceInfo> show(std::string_view dev);
  Result<BlockDeviceInfo> setWorkers(std::string_view dev, int workers, uint32_t uid, bool force);
  Result<BlockDeviceInfo> setQueueDepth(std::string_view dev, uint32_t depth, uint32_t uid,
                                        bool force);
  Result<std::string> detach(std::string_view dev, uint32_t uid, bool force);
  BlockBackend* backendFor(std::string_view dev);

 private:
  std::unique_ptr<LoopManager> loop_;
  std::unique_ptr<NbdManager> nbd_;
  BackendAvailability avail_;
  std::string sysRoot_;
  std::unique_ptr<KernelLoopBackend> kernelB_;
  std::unique_ptr<NbdBackend> nbdB_;
};

}  // namespace cxiosync
