// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/app/loop_bus_backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
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
  i.bound = k.bound;
  i.foreign = d.foreign;
  i.foreignOwner = d.foreign ? foreignOwnerName(d.foreignOwner) : "";
  i.backend = d.backend;
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

Result<dbus::LoopSetupOutcome> LoopBusBackend::setup(int backingFd, const dbus::LoopSetupOptions& o,
                                                     uint32_t callerUid) {
  LoopOptions lo;
  lo.readOnly = o.readOnly;
  lo.offset = o.offset;
  lo.sizeLimit = o.sizeLimit;
  lo.blockSize = o.blockSize;
  lo.autoclear = o.autoclear;
  lo.partscan = o.partscan;
  auto mode = parseDirectIoMode(o.directIo);
  if (!mode) return makeError(mode.error().message, EINVAL);
  lo.directIo = *mode;
  if (auto st = validateLoopOptions(lo); !st) return st.error();
  auto r = m_.setup(backingFd, lo, callerUid);
  if (!r) return r.error();
  dbus::LoopSetupOutcome out;
  out.device = toInfo(r->device);
  if (out.device.directIoNote.empty()) out.device.directIoNote = r->directIoNote;
  out.notes = r->notes;
  // The caller gets a READ-ONLY handle on the device (enough to keep an autoclear device
  // alive; no write access to the block device through us). Reopened through /proc so that
  // a private node that was already unlinked works too.
  int devFd = r->deviceFd.get();
  if (devFd >= 0) {
    std::string self = "/proc/self/fd/" + std::to_string(devFd);
    int ro = ::open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (ro >= 0) {
      out.deviceFd = dbus::OwnedFd(ro);
    } else {
      out.deviceFd = dbus::OwnedFd(r->deviceFd.release());
    }
  }
  return out;
}

Result<std::vector<dbus::LoopInfo>> LoopBusBackend::list(bool includeForeign) {
  auto r = m_.list(includeForeign);
  if (!r) return r.error();
  std::vector<dbus::LoopInfo> out;
  for (const auto& d : *r) out.push_back(toInfo(d));
  return out;
}

Result<dbus::LoopInfo> LoopBusBackend::show(const std::string& name) {
  auto r = m_.show(name);
  if (!r) return r.error();
  return toInfo(*r);
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
  return info(m_.setDirectIO(name, on, callerUid, force));
}

Result<dbus::LoopInfo> LoopBusBackend::setBlockSize(const std::string& name, uint32_t size,
                                                    uint32_t callerUid, bool force) {
  return info(m_.setBlockSize(name, size, callerUid, force));
}

Result<dbus::LoopInfo> LoopBusBackend::setCapacity(const std::string& name, uint32_t callerUid,
                                                   bool force) {
  return info(m_.setCapacity(name, callerUid, force));
}

Result<dbus::LoopInfo> LoopBusBackend::setAutoclear(const std::string& name, bool on,
                                                    uint32_t callerUid, bool force) {
  return info(m_.setAutoclear(name, on, callerUid, force));
}

Result<dbus::LoopDetachOutcome> LoopBusBackend::detach(const std::string& name, uint32_t callerUid,
                                                       bool force) {
  auto r = m_.detach(name, callerUid, force);
  if (!r) return r.error();
  return dbus::LoopDetachOutcome{r->detached, r->lazy, r->note};
}

std::unique_ptr<LoopBus> LoopBus::create(const Options& options) {
  LoopManagerOptions lo;
  lo.runDir = options.runDir;
  lo.devRoot = options.devRoot;
  lo.sysRoot = options.sysRoot;
  auto m = LoopManager::create(lo);
  if (!m) {
    spdlog::warn("loop devices unavailable (the loop API answers NotSupported): {}",
                 m.error().message);
    return nullptr;
  }
  auto rec = (*m)->reconcile();
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
