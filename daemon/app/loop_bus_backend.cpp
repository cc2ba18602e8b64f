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

dbus::LoopInfo LoopBusBackend::toInfo(const LoopDeviceInfo& d) {
  dbus::LoopInfo i;
  const auto& k = d.kernel;
  i.name = d.name;
  i.device = d.path;
  i.backingFile = k.backingFile;
  i.offset = k.offset;
  i.sizeLimit = k.sizeLimit;
  i.sizeBytes = k.sizeBytes;
  i.readOnly = k.readOnly;
  i.autoclear = k.autoclear;
  i.partscan = k.partscan;
  i.directIo = k.directIo;
  i.blockSize = k.logicalBlockSize;
  i.requestDepth = k.requestDepth;
  i.queueDepth = k.requestDepth;
  i.workers = d.workers > 0 ? static_cast<uint32_t>(d.workers) : 1;
  // One loop worker per issuing cgroup (5.14+): no per-device count to change.
  i.workersSettable = false;
  i.queueDepthSettable = !d.foreign;
  i.bound = k.bound;
  i.foreign = d.foreign;
  i.foreignOwner = d.foreign ? foreignOwnerName(d.foreignOwner) : "";
  i.backend = "kernel";
  if (d.backingDevice) i.backingDevice = d.backingDevice->str();
  if (d.backingDisk) i.backingDisk = d.backingDisk->str();
  if (d.record && !d.foreign) {
    const auto& r = *d.record;
    i.setupByUid = r.uid;
    i.setupRealtimeUsec = r.createdUnix > 0 ? static_cast<uint64_t>(r.createdUnix) * 1000000u : 0;
    i.directIoMode = directIoModeName(r.options.directIo);
    i.blockSizeSource = blockSizeSourceName(r.blockSizeSource);
    // The note is about the state at setup; once direct I/O is on it no longer applies.
    if (!k.directIo) i.directIoNote = r.directIoNote;
  }
  return i;
}

dbus::LoopInfo LoopBusBackend::toInfo(const BlockDeviceInfo& d) {
  dbus::LoopInfo i;
  i.name = d.name;
  i.device = d.path;
  i.backingFile = d.backingFile;
  i.sizeBytes = d.sizeBytes;
  i.readOnly = d.readOnly;
  i.directIo = d.directIo;
  i.blockSize = d.blockSize;
  i.requestDepth = d.queueDepth;
  i.queueDepth = d.queueDepth;
  i.workers = d.workers > 0 ? static_cast<uint32_t>(d.workers) : 1;
  i.workersSettable = d.workersSettableLive;
  i.queueDepthSettable = false;  // the nbd backend's concurrency is its worker count
  i.foreign = d.foreign;
  i.foreignOwner = d.foreign ? "manual" : "";
  i.backend = d.backend;
  i.serverCgroup = d.serverCgroup;
  if (d.setupByUid && !d.foreign) i.setupByUid = *d.setupByUid;
  if (!d.foreign) i.directIoMode = d.directIo ? "on" : "auto";
  return i;
}

namespace {

bool isNbd(const std::string& name) {
  return static_cast<bool>(parseNbdName(name));
}

Status notForNbd(const std::string& name, const char* what) {
  if (!isNbd(name)) return Ok{};
  return makeError(name + ": " + what +
                       " is a kernel loop setting; an nbd device's settings are fixed at setup "
                       "(detach and set it up again)",
                   ENOTSUP);
}

}  // namespace

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

Result<dbus::LoopSetupOutcome> LoopBusBackend::setup(int backingFd, const dbus::LoopSetupOptions& o,
                                                     uint32_t callerUid) {
  BlockSetupOptions bo;
  LoopOptions& lo = bo.loop;
  lo.readOnly = o.readOnly;
  lo.offset = o.offset;
  lo.sizeLimit = o.sizeLimit;
  lo.blockSize = o.blockSize;
  lo.autoclear = o.autoclear;
  lo.partscan = o.partscan;
  auto mode = parseDirectIoMode(o.directIo);
  if (!mode) return makeError(mode.error().message, EINVAL);
  lo.directIo = *mode;
  auto kind = parseBackendKind(o.backend);
  if (!kind) return kind.error();
  bo.backend = *kind;
  bo.workers = static_cast<int>(o.workers);
  bo.queueDepth = o.queueDepth;
  if (o.nbdTimeoutSec) bo.nbdTimeoutSec = o.nbdTimeoutSec;
  auto where = nbd::parseServerCgroup(o.serverCgroup);
  if (!where) return where.error();
  bo.serverCgroup = *where;
  bo.callerPid = static_cast<pid_t>(std::min<uint32_t>(o.callerPid, INT32_MAX));
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
  if (auto st = validateLoopOptions(lo); !st) return st.error();
  auto r = d_.setup(backingFd, bo, callerUid);
  if (!r) return r.error();
  dbus::LoopSetupOutcome out;
  if (r->device.backend == "nbd") {
    out.device = toInfo(r->device);
  } else {
    auto full = m_.show(r->device.name);
    if (!full) return full.error();
    out.device = toInfo(*full);
  }
  out.notes = std::move(notes);
  out.notes.insert(out.notes.end(), r->notes.begin(), r->notes.end());
  auto handle = loopCallerHandle(std::move(r->deviceFd), r->device.path, callerUid);
  if (!handle) {
    // No read-only handle for the caller: take the device down rather than leave one the
    // caller cannot hold (autoclear) or hand out write access it did not ask for.
    (void)d_.detach(r->device.name, callerUid, false);
    return handle.error();
  }
  out.deviceFd = std::move(*handle);
  return out;
}

Result<std::vector<dbus::LoopInfo>> LoopBusBackend::list(bool includeForeign) {
  auto r = m_.list(includeForeign);
  if (!r) return r.error();
  std::vector<dbus::LoopInfo> out;
  for (const auto& d : *r) out.push_back(toInfo(d));
  // No nbd module (or no records yet) is no nbd devices, not a failed list.
  if (auto n = d_.nbdManager().list(includeForeign))
    for (const auto& d : *n) out.push_back(toInfo(d));
  return out;
}

Result<dbus::LoopInfo> LoopBusBackend::show(const std::string& name) {
  if (isNbd(name)) {
    auto n = d_.nbdManager().show(name);
    if (!n) return n.error();
    return toInfo(*n);
  }
  auto r = m_.show(name);
  if (!r) return r.error();
  return toInfo(*r);
}

Result<dbus::LoopInfo> LoopBusBackend::reread(const std::string& name) {
  return show(name);
}

dbus::LoopAccessKind LoopBusBackend::access(const dbus::LoopInfo& d, uint32_t callerUid,
                                            bool force) {
  if (d.foreign || d.setupByUid == dbus::kUnknownUid)
    return callerUid == 0 && force ? dbus::LoopAccessKind::Allowed : dbus::LoopAccessKind::Refused;
  if (d.setupByUid == callerUid || callerUid == 0) return dbus::LoopAccessKind::Allowed;
  return dbus::LoopAccessKind::NeedsOthers;
}

namespace {
Result<dbus::LoopInfo> info(Result<LoopDeviceInfo> r) {
  if (!r) return r.error();
  return LoopBusBackend::toInfo(*r);
}
}  // namespace

Result<dbus::LoopInfo> LoopBusBackend::setDirectIO(const std::string& name, bool on,
                                                   uint32_t callerUid, bool force) {
  if (auto st = notForNbd(name, "direct I/O"); !st) return st.error();
  return info(m_.setDirectIO(name, on, callerUid, force));
}

Result<dbus::LoopInfo> LoopBusBackend::setBlockSize(const std::string& name, uint32_t size,
                                                    uint32_t callerUid, bool force) {
  if (auto st = notForNbd(name, "the block size"); !st) return st.error();
  return info(m_.setBlockSize(name, size, callerUid, force));
}

Result<dbus::LoopInfo> LoopBusBackend::setCapacity(const std::string& name, uint32_t callerUid,
                                                   bool force) {
  if (auto st = notForNbd(name, "the capacity"); !st) return st.error();
  return info(m_.setCapacity(name, callerUid, force));
}

Result<dbus::LoopInfo> LoopBusBackend::setAutoclear(const std::string& name, bool on,
                                                    uint32_t callerUid, bool force) {
  if (auto st = notForNbd(name, "autoclear"); !st) return st.error();
  return info(m_.setAutoclear(name, on, callerUid, force));
}

Result<dbus::LoopInfo> LoopBusBackend::setWorkers(const std::string& name, uint32_t workers,
                                                  uint32_t callerUid, bool force) {
  auto r = d_.setWorkers(name, static_cast<int>(std::min<uint32_t>(workers, INT32_MAX)), callerUid,
                         force);
  if (!r) return r.error();
  return reread(name);
}

Result<dbus::LoopInfo> LoopBusBackend::setQueueDepth(const std::string& name, uint32_t depth,
                                                     uint32_t callerUid, bool force) {
  auto r = d_.setQueueDepth(name, depth, callerUid, force);
  if (!r) return r.error();
  return reread(name);
}

Result<dbus::LoopDetachOutcome> LoopBusBackend::detach(const std::string& name, uint32_t callerUid,
                                                       bool force) {
  if (isNbd(name)) {
    auto n = d_.detach(name, callerUid, force);
    if (!n) return n.error();
    return dbus::LoopDetachOutcome{true, false, *n};
  }
  auto r = m_.detach(name, callerUid, force);
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
