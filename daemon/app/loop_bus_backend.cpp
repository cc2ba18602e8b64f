// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/app/loop_bus_backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <string>

#include "daemon/app/options.h"
#include "daemon/log/logging.h"

namespace cxiosync {

Result<dbus::OwnedFd> loopCallerHandle(UniqueFd dev, const std::string& path, uint32_t uid) {
  if (uid != 0) {
    // No handle on the device for anyone but root (issue 26): an fd on /dev/nbdN or
    // /dev/loopN keeps reaching whatever the kernel attaches there later, after the device
    // stopped being the caller's (an nbd device reused by root, a loop device detached and
    // attached again), and no kernel revokes it. /dev/null keeps LoopSetup's signature.
    int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0) return sysError(errno, "open", "/dev/null");
    return dbus::OwnedFd(null);
  }
  if (dev.get() >= 0) {
    const std::string self = "/proc/self/fd/" + std::to_string(dev.get());
    int ro = ::open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (ro >= 0) return dbus::OwnedFd(ro);
  }
  int ro = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (ro >= 0) return dbus::OwnedFd(ro);
  if (dev.get() >= 0) return dbus::OwnedFd(dev.release());  // root could open it read-write
  return sysError(errno, "reopen read-only", path);
}

namespace {

// The bus's options in the block devices' terms: the one conversion (already validated by
// wire::parseLoopSetupOptions; BlockDevices::setup validates them once more as a whole).
Result<BlockSetupOptions> blockOptions(const dbus::LoopSetupOptions& o) {
  BlockSetupOptions bo;
  LoopOptions& lo = bo.loop;
  lo.readOnly = o.readOnly;
  lo.offset = o.offset;
  lo.sizeLimit = o.sizeLimit;
  lo.blockSize = o.blockSize;
  lo.autoclear = o.autoclear;
  lo.partscan = o.partscan;
  lo.directIo = o.directIo;
  lo.queueDepth = o.queueDepth;
  bo.backend = o.backend;
  bo.workers = static_cast<int>(std::min<uint32_t>(o.workers, INT32_MAX));
  if (o.nbdTimeoutSec) bo.nbdTimeoutSec = o.nbdTimeoutSec;
  auto where = nbd::parseServerCgroup(o.serverCgroup);
  if (!where) return where.error();
  bo.serverCgroup = *where;
  bo.callerPid = static_cast<pid_t>(std::min<uint32_t>(o.callerPid, INT32_MAX));
  return bo;
}

}  // namespace

Result<dbus::LoopSetupOutcome> LoopBusBackend::setup(int backingFd, const dbus::LoopSetupOptions& o,
                                                     uint32_t callerUid) {
  auto bo = blockOptions(o);
  if (!bo) return bo.error();
  LoopOptions& lo = bo->loop;
  std::vector<std::string> notes;
  // Partition scanning runs the kernel's partition parsers over the image's bytes and creates
  // loopNpM nodes: an unprivileged caller's image is not trusted that far.
  if (lo.partscan && callerUid != 0) {
    lo.partscan = false;
    notes.push_back("partscan is for root only: turned off");
  }
  // Autoclear detaches on the last close, and only root gets a handle that could keep the
  // device open (loopCallerHandle): for anyone else it would be gone when the daemon lets go.
  if (lo.autoclear && callerUid != 0)
    return makeError(
        "autoclear is for root only: a non-root caller gets no handle on the device to keep "
        "it alive (device_fd is /dev/null)",
        EPERM);
  auto r = d_.setup(backingFd, *bo, callerUid);
  if (!r) return r.error();
  dbus::LoopSetupOutcome out;
  out.device = std::move(r->device);
  out.notes = std::move(notes);
  out.notes.insert(out.notes.end(), r->notes.begin(), r->notes.end());
  auto handle = loopCallerHandle(std::move(r->deviceFd), out.device.device, callerUid);
  if (!handle) {
    // No read-only handle for root: take the device down rather than leave one it cannot
    // hold (autoclear).
    (void)d_.detach(out.device.name, callerUid, false);
    return handle.error();
  }
  out.deviceFd = std::move(*handle);
  return out;
}

Result<std::vector<dbus::LoopInfo>> LoopBusBackend::list(bool includeForeign) {
  return d_.list(includeForeign);
}

Result<dbus::LoopInfo> LoopBusBackend::show(const std::string& name) {
  return d_.show(name);
}

dbus::LoopAccessKind LoopBusBackend::access(const dbus::LoopInfo& d, uint32_t callerUid,
                                            bool force) {
  if (d.foreign || d.setupByUid == dbus::kUnknownUid)
    return callerUid == 0 && force ? dbus::LoopAccessKind::Allowed : dbus::LoopAccessKind::Refused;
  if (d.setupByUid == callerUid || callerUid == 0) return dbus::LoopAccessKind::Allowed;
  return dbus::LoopAccessKind::NeedsOthers;
}

Result<dbus::LoopInfo> LoopBusBackend::setDirectIO(const std::string& name, bool on,
                                                   uint32_t callerUid, bool force) {
  return d_.setDirectIO(name, on, callerUid, force);
}

Result<dbus::LoopInfo> LoopBusBackend::setBlockSize(const std::string& name, uint32_t size,
                                                    uint32_t callerUid, bool force) {
  return d_.setBlockSize(name, size, callerUid, force);
}

Result<dbus::LoopInfo> LoopBusBackend::setCapacity(const std::string& name, uint32_t callerUid,
                                                   bool force) {
  return d_.setCapacity(name, callerUid, force);
}

Result<dbus::LoopInfo> LoopBusBackend::setAutoclear(const std::string& name, bool on,
                                                    uint32_t callerUid, bool force) {
  return d_.setAutoclear(name, on, callerUid, force);
}

Result<dbus::LoopInfo> LoopBusBackend::setWorkers(const std::string& name, uint32_t workers,
                                                  uint32_t callerUid, bool force) {
  return d_.setWorkers(name, static_cast<int>(std::min<uint32_t>(workers, INT32_MAX)), callerUid,
                       force);
}

Result<dbus::LoopInfo> LoopBusBackend::setQueueDepth(const std::string& name, uint32_t depth,
                                                     uint32_t callerUid, bool force) {
  return d_.setQueueDepth(name, depth, callerUid, force);
}

Result<dbus::LoopDetachOutcome> LoopBusBackend::detach(const std::string& name, uint32_t callerUid,
                                                       bool force) {
  auto r = d_.detach(name, callerUid, force);
  if (!r) return r.error();
  return dbus::LoopDetachOutcome{r->detached, r->lazy, r->note};
}

std::unique_ptr<LoopBus> LoopBus::create(const Options& options) {
  BlockDevices::Options bo;
  LoopManagerOptions& lo = bo.loop;
  lo.runDir = options.runDir;
  lo.devRoot = options.devRoot;
  lo.sysRoot = options.sysRoot;
  auto m = BlockDevices::create(bo);
  if (!m) {
    spdlog::warn("loop devices unavailable (the loop API answers NotSupported): {}",
                 m.error().message);
    return nullptr;
  }
  auto rec = (*m)->loopManager().reconcile();
  if (!rec) {
    spdlog::warn("loop devices: reconcile failed: {}", rec.error().message);
  } else {
    for (const auto& d : rec->dropped)
      spdlog::info("loop devices: forgot loop{}: {}", d.record.index, d.reason);
    if (!rec->kept.empty())
      spdlog::info("loop devices: {} device(s) set up by cxiosync still attached",
                   rec->kept.size());
  }
  return std::unique_ptr<LoopBus>(new LoopBus(std::move(*m)));
}

}  // namespace cxiosync
