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
  LoopOptions loop;  // read-only, offset, size, block size, direct I/O, queue depth...
  int workers = 0;   // 0 = not asked (1)
  BackendKind backend = BackendKind::Auto;
  uint32_t nbdTimeoutSec = nbd::kDefaultTimeoutSec;
  // nbd: the server's cgroup (nbd_cgroup.h) and the caller's process for "caller".
  nbd::ServerCgroup serverCgroup = nbd::ServerCgroup::Default;
  pid_t callerPid = 0;
};

struct BlockSetupResult {
  BlockDevice device;
  BackendChoice choice;
  std::vector<std::string> notes;
  UniqueFd deviceFd;  // kernel loop with autoclear: keep it (see LoopSetupResult)
};

struct BlockDetachResult {
  bool detached = false;  // gone now
  bool lazy = false;      // still in use: detaches on its last close
  std::string note;
};

// The interface every backend implements: every verb of the Loop API. A verb a backend
// cannot do on a live device answers ENOTSUP with the reason.
class BlockBackend {
 public:
  virtual ~BlockBackend() = default;
  virtual BackendKind kind() const = 0;
  virtual bool handles(std::string_view dev) const = 0;  // by name
  // `backing` is what BlockDevices::setup read from the fd, once.
  virtual Result<BlockSetupResult> setup(int backingFd, const BackingInfo& backing,
                                         const BlockSetupOptions& o, uint32_t uid) = 0;
  virtual Result<std::vector<BlockDevice>> list(bool includeForeign) = 0;
  virtual Result<BlockDevice> show(std::string_view dev) = 0;
  virtual Result<BlockDevice> setDirectIO(std::string_view dev, bool on, uint32_t uid,
                                          bool force) = 0;
  virtual Result<BlockDevice> setBlockSize(std::string_view dev, uint32_t size, uint32_t uid,
                                           bool force) = 0;
  virtual Result<BlockDevice> setCapacity(std::string_view dev, uint32_t uid, bool force) = 0;
  virtual Result<BlockDevice> setAutoclear(std::string_view dev, bool on, uint32_t uid,
                                           bool force) = 0;
  virtual Result<BlockDevice> setWorkers(std::string_view dev, int workers, uint32_t uid,
                                         bool force) = 0;
  virtual Result<BlockDevice> setQueueDepth(std::string_view dev, uint32_t depth, uint32_t uid,
                                            bool force) = 0;
  virtual Result<BlockDetachResult> detach(std::string_view dev, uint32_t uid, bool force) = 0;
};

// The verbs every backend declares (kernel loop and nbd).
#define CXIOSYNC_BLOCK_BACKEND_VERBS                                                              \
  bool handles(std::string_view dev) const override;                                              \
  Result<BlockSetupResult> setup(int backingFd, const BackingInfo& backing,                       \
                                 const BlockSetupOptions& o, uint32_t uid) override;              \
  Result<std::vector<BlockDevice>> list(bool includeForeign) override;                            \
  Result<BlockDevice> show(std::string_view dev) override;                                        \
  Result<BlockDevice> setDirectIO(std::string_view dev, bool on, uint32_t uid, bool force)        \
      override;                                                                                   \
  Result<BlockDevice> setBlockSize(std::string_view dev, uint32_t size, uint32_t uid, bool force) \
      override;                                                                                   \
  Result<BlockDevice> setCapacity(std::string_view dev, uint32_t uid, bool force) override;       \
  Result<BlockDevice> setAutoclear(std::string_view dev, bool on, uint32_t uid, bool force)       \
      override;                                                                                   \
  Result<BlockDevice> setWorkers(std::string_view dev, int workers, uint32_t uid, bool force)     \
      override;                                                                                   \
  Result<BlockDevice> setQueueDepth(std::string_view dev, uint32_t depth, uint32_t uid,           \
                                    bool force) override;                                         \
  Result<BlockDetachResult> detach(std::string_view dev, uint32_t uid, bool force) override;

// Kernel loop devices through LoopManager (+ queue depth through sysfs).
class KernelLoopBackend : public BlockBackend {
 public:
  KernelLoopBackend(LoopManager& m, std::string sysRoot) : m_(m), sysRoot_(std::move(sysRoot)) {}
  BackendKind kind() const override { return BackendKind::Kernel; }
  CXIOSYNC_BLOCK_BACKEND_VERBS
  // The one conversion of the loop manager's state into the device model.
  static BlockDevice toInfo(const LoopDeviceInfo& d);

 private:
  LoopManager& m_;
  std::string sysRoot_;
};

class NbdBackend : public BlockBackend {
 public:
  explicit NbdBackend(NbdManager& m) : m_(m) {}
  BackendKind kind() const override { return BackendKind::Nbd; }
  CXIOSYNC_BLOCK_BACKEND_VERBS

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

  LoopManager& loopManager() { return *loop_; }
  NbdManager& nbdManager() { return *nbd_; }
  // The front door: every verb, routed to the backend by device name (setup: chooseBackend).
  // The backing fd is inspected here, once; the options are validated here, once.
  Result<BlockSetupResult> setup(int backingFd, const BlockSetupOptions& o, uint32_t uid);
  // Every backend's devices (a backend that is not there, e.g. no nbd module, adds none).
  Result<std::vector<BlockDevice>> list(bool includeForeign);
  Result<BlockDevice> show(std::string_view dev);
  Result<BlockDevice> setDirectIO(std::string_view dev, bool on, uint32_t uid, bool force);
  Result<BlockDevice> setBlockSize(std::string_view dev, uint32_t size, uint32_t uid, bool force);
  Result<BlockDevice> setCapacity(std::string_view dev, uint32_t uid, bool force);
  Result<BlockDevice> setAutoclear(std::string_view dev, bool on, uint32_t uid, bool force);
  Result<BlockDevice> setWorkers(std::string_view dev, int workers, uint32_t uid, bool force);
  Result<BlockDevice> setQueueDepth(std::string_view dev, uint32_t depth, uint32_t uid, bool force);
  Result<BlockDetachResult> detach(std::string_view dev, uint32_t uid, bool force);

 private:
  template <class F>
  auto route(std::string_view dev, F&& f) -> decltype(f(std::declval<BlockBackend&>()));
  std::unique_ptr<LoopManager> loop_;
  std::unique_ptr<NbdManager> nbd_;
  BackendAvailability avail_;
  std::string sysRoot_;
  std::unique_ptr<KernelLoopBackend> kernelB_;
  std::unique_ptr<NbdBackend> nbdB_;
};

}  // namespace cxiosync
