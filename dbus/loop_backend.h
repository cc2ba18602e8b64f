// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The contract between the bus boundary (dbus/) and the daemon's loop manager
// (daemon/blockdev/loop/loop_manager.h), like ManagerBackend for the Manager interface: BusServer
// exports org.cxiosync1.Loop objects and Manager.LoopSetup/LoopList over a LoopBackend; the
// daemon implements it (daemon/app/loop_bus_backend.h) over LoopManager. No daemon/ header is
// included here: data flows one way. Threading: see LoopJobFn below.
//
// Before a mutation reaches the backend, BusServer has validated the arguments and
// authorized the caller: uid 0, or polkit org.cxiosync1.loop-setup (setup),
// loop-modify-others / loop-delete-others (a device set up for another uid, as access()
// says). The backend still enforces the one rule the mechanics always enforce: a foreign
// device (not set up by cxiosync) is changed only by uid 0 with force (EPERM otherwise).
//
// Errors: cxiosync::Error with an errno. BusServer maps them (loopErrorName): ENOENT →
// NoSuchDevice, EINVAL/ERANGE/EBADF → InvalidArgument, EPERM/EACCES → AccessDenied,
// EBUSY/EAGAIN → Busy, EOPNOTSUPP/ENOSYS/ENODEV → NotSupported, anything else → Failed.
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "policy/blockdev/block_device.h"
#include "policy/blockdev/loop_vocab.h"
#include "policy/result.h"

namespace cxiosync::dbus {

using cxiosync::kUnknownUid;

// Options of a new loop device, as the caller gave them (validated by BusServer).
struct LoopSetupOptions {
  bool readOnly = false;
  uint64_t offset = 0;
  uint64_t sizeLimit = 0;
  uint32_t blockSize = 0;  // 0 = chosen by the daemon
  DirectIoMode directIo = DirectIoMode::Auto;
  bool autoclear = false;
  bool partscan = false;
  BackendKind backend = BackendKind::Auto;  // daemon/blockdev/backend.h
  uint32_t workers = 0;                     // 0 = not asked (1); else 1..kMaxLoopWorkers
  uint32_t queueDepth = 0;                  // kernel loop nr_requests; 0 = the kernel's default
  uint32_t nbdTimeoutSec = 0;               // nbd I/O timeout; 0 = the backend's default
  // nbd: where the server runs, so its backing I/O is charged there: "caller" (the caller's
  // cgroup) | "daemon" | "" (default: caller for uid != 0, daemon for uid 0).
  std::string serverCgroup;
  // Not on the wire: the caller's pid as the bus reports it (0 = unknown), for "caller".
  uint32_t callerPid = 0;
};

// One device as the org.cxiosync1.Loop properties show it: the one device model
// (policy/blockdev/block_device.h); dbus/loop_props.h maps its fields to the properties.
using LoopInfo = BlockDevice;

// A file descriptor owned by whoever holds this (closed on destruction). Move-only.
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd&& o) noexcept : fd_(o.release()) {}
  OwnedFd& operator=(OwnedFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct LoopSetupOutcome {
  LoopInfo device;
  OwnedFd deviceFd;  // a handle on the new device, returned to the caller (LoopSetup "h")
  std::vector<std::string> notes;
};

struct LoopDetachOutcome {
  bool detached = false;  // gone now
  bool lazy = false;      // still in use: detaches on its last close
  std::string note;
};

// What a caller may do to an existing device (mirrors the mechanics' loopAccess()).
enum class LoopAccessKind {
  Allowed,      // set up for this caller (or uid 0; or uid 0 with force on a foreign one)
  NeedsOthers,  // set up through cxiosync for another uid: polkit *-others
  Refused,      // foreign, and not (uid 0 with force)
};

class LoopBackend {
 public:
  virtual ~LoopBackend() = default;

  // A new device backed by `backingFd` (borrowed: not closed, never reopened by path).
  virtual Result<LoopSetupOutcome> setup(int backingFd, const LoopSetupOptions& options,
                                         uint32_t callerUid) = 0;
  // Every bound device (foreign ones with includeForeign).
  virtual Result<std::vector<LoopInfo>> list(bool includeForeign) = 0;
  // "loop3". ENOENT when it does not exist or is not bound.
  virtual Result<LoopInfo> show(const std::string& name) = 0;
  virtual LoopAccessKind access(const LoopInfo& device, uint32_t callerUid, bool force) = 0;

  virtual Result<LoopInfo> setDirectIO(const std::string& name, bool on, uint32_t callerUid,
                                       bool force) = 0;
  virtual Result<LoopInfo> setBlockSize(const std::string& name, uint32_t size, uint32_t callerUid,
                                        bool force) = 0;
  virtual Result<LoopInfo> setCapacity(const std::string& name, uint32_t callerUid, bool force) = 0;
  virtual Result<LoopInfo> setAutoclear(const std::string& name, bool on, uint32_t callerUid,
                                        bool force) = 0;
  // ENOTSUP (NotSupported) with the reason where the backend cannot change it live.
  virtual Result<LoopInfo> setWorkers(const std::string& name, uint32_t workers, uint32_t callerUid,
                                      bool force) = 0;
  virtual Result<LoopInfo> setQueueDepth(const std::string& name, uint32_t depth,
                                         uint32_t callerUid, bool force) = 0;
  virtual Result<LoopDetachOutcome> detach(const std::string& name, uint32_t callerUid,
                                           bool force) = 0;
};

// How LoopServer keeps blocking loop work off the event loop: `work` (a LoopBackend call:
// ioctls, device-node waits, EBUSY retries, fstat on a caller's fd that a FUSE file can hang
// for ever, sysfs writes) runs on a worker thread, then `done` runs on the loop thread, where
// the reply is sent and the D-Bus objects change. Both closures are destroyed on the loop
// thread. false: too many jobs pending (the call answers Busy); nothing runs. The daemon
// implements it over daemon/core/work_queue.h; unset, both run at once on the calling thread
// (the test server's fake backend). So with jobs every LoopBackend call but access() runs on
// the worker thread, one at a time; access() (pure) runs on the loop thread.
using LoopJobFn = std::function<bool(std::function<void()> work, std::function<void()> done)>;

// The org.cxiosync1.Error.* names of the loop calls, spelled once (dbus/errors.cpp).
enum class LoopErrorKind {
  InvalidArgument,
  NoSuchDevice,
  AccessDenied,
  Busy,
  NotSupported,
  Failed
};
const char* loopErrorKindName(LoopErrorKind kind);
LoopErrorKind loopErrorKindOf(const Error& error);  // errno → kind (see above)
// errno → org.cxiosync1.Error.* for loop calls: loopErrorKindName(loopErrorKindOf(error)).
const char* loopErrorName(const Error& error);

}  // namespace cxiosync::dbus
