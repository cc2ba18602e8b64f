// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/devices/backend_devices.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace cxiosync {

// ---- kernel loop -------------------------------------------------------------------------

bool KernelLoopBackend::handles(std::string_view dev) const {
  return static_cast<bool>(parseLoopName(dev));
}

BlockDevice KernelLoopBackend::toInfo(const LoopDeviceInfo& d) {
  BlockDevice b;
  const auto& k = d.kernel;
  b.name = d.name;
  b.device = d.path;
  b.backend = BackendKind::Kernel;
  b.backingFile = k.backingFile;
  b.offset = k.offset;
  b.sizeLimit = k.sizeLimit;
  b.sizeBytes = k.sizeBytes;
  b.readOnly = k.readOnly;
  b.autoclear = k.autoclear;
  b.partscan = k.partscan;
  b.directIo = k.directIo;
  b.blockSize = k.logicalBlockSize;
  b.requestDepth = k.requestDepth;
  b.queueDepth = k.requestDepth;
  // One loop worker per issuing cgroup (5.14+): no per-device count to change.
  b.workers = d.workers > 0 ? static_cast<uint32_t>(d.workers) : 1;
  b.workersSettable = false;
  b.queueDepthSettable = !d.foreign;
  // Buffered: the worker handles one request at a time. Direct I/O: submitted
  // asynchronously, up to nr_requests at once.
  b.inFlightMax = d.inFlightMax;
  b.bound = k.bound;
  b.foreign = d.foreign;
  b.foreignOwner = d.foreign ? foreignOwnerName(d.foreignOwner) : "";
  if (d.backingDevice) b.backingDevice = d.backingDevice->str();
  if (d.backingDisk) b.backingDisk = d.backingDisk->str();
  if (d.record && !d.foreign) {
    const auto& r = *d.record;
    b.setupByUid = r.uid;
    b.setupRealtimeUsec = r.createdUnix > 0 ? static_cast<uint64_t>(r.createdUnix) * 1000000u : 0;
    b.directIoMode = r.options.directIo;
    b.blockSizeSource = blockSizeSourceName(r.blockSizeSource);
    // The note is about the state at setup; once direct I/O is on it no longer applies.
    if (!k.directIo) b.directIoNote = r.directIoNote;
    if (!r.directIoNote.empty()) b.note = "direct I/O off: " + r.directIoNote;
  }
  return b;
}

namespace {

Result<BlockDevice> loopInfo(Result<LoopDeviceInfo> r) {
  if (!r) return r.error();
  return KernelLoopBackend::toInfo(*r);
}

}  // namespace

Result<BlockSetupResult> KernelLoopBackend::setup(int backingFd, const BackingInfo& backing,
                                                  const BlockSetupOptions& o, uint32_t uid) {
  if (o.loop.queueDepth)
    if (auto v = validateQueueDepth(o.loop.queueDepth, loopHwQueueDepth(sysRoot_)); !v)
      return v.error();
  auto r = m_.setup(backingFd, backing, o.loop, uid);
  if (!r) return r.error();
  BlockSetupResult out;
  out.notes = r->notes;
  if (!r->directIoNote.empty()) out.notes.push_back("direct I/O is off: " + r->directIoNote);
  // The manager read the device back after its last step: no second look.
  out.device = toInfo(r->device);
  out.deviceFd = std::move(r->deviceFd);
  return out;
}

Result<std::vector<BlockDevice>> KernelLoopBackend::list(bool includeForeign) {
  auto l = m_.list(includeForeign);
  if (!l) return l.error();
  std::vector<BlockDevice> out;
  for (const auto& d : *l) out.push_back(toInfo(d));
  return out;
}

Result<BlockDevice> KernelLoopBackend::show(std::string_view dev) {
  return loopInfo(m_.show(dev));
}

Result<BlockDevice> KernelLoopBackend::setDirectIO(std::string_view dev, bool on, uint32_t uid,
                                                   bool force) {
  return loopInfo(m_.setDirectIO(dev, on, uid, force));
}

Result<BlockDevice> KernelLoopBackend::setBlockSize(std::string_view dev, uint32_t size,
                                                    uint32_t uid, bool force) {
  return loopInfo(m_.setBlockSize(dev, size, uid, force));
}

Result<BlockDevice> KernelLoopBackend::setCapacity(std::string_view dev, uint32_t uid, bool force) {
  return loopInfo(m_.setCapacity(dev, uid, force));
}

Result<BlockDevice> KernelLoopBackend::setAutoclear(std::string_view dev, bool on, uint32_t uid,
                                                    bool force) {
  return loopInfo(m_.setAutoclear(dev, on, uid, force));
}

Result<BlockDevice> KernelLoopBackend::setWorkers(std::string_view dev, int workers, uint32_t,
                                                  bool) {
  if (auto v = validateWorkers(workers); !v) return v.error();
  auto d = m_.show(dev);
  if (!d) return d.error();
  return makeError(d->name +
                       ": the kernel loop driver has no worker count (one worker per issuing "
                       "cgroup). For concurrency: --direct-io=on (asynchronous, up to "
                       "--queue-depth requests in flight), or set the device up again with "
                       "--backend nbd --workers " +
                       std::to_string(workers),
                   ENOTSUP);
}

Result<BlockDevice> KernelLoopBackend::setQueueDepth(std::string_view dev, uint32_t depth,
                                                     uint32_t uid, bool force) {
  return loopInfo(m_.setQueueDepth(dev, depth, uid, force));
}

Result<BlockDetachResult> KernelLoopBackend::detach(std::string_view dev, uint32_t uid,
                                                    bool force) {
  auto r = m_.detach(dev, uid, force);
  if (!r) return r.error();
  return BlockDetachResult{r->detached, r->lazy, r->note};
}

// ---- nbd ---------------------------------------------------------------------------------

bool NbdBackend::handles(std::string_view dev) const {
  return static_cast<bool>(parseNbdName(dev));
}

namespace {

// What the nbd manager leaves to the device model: its concurrency is the worker count, not a
// request depth; a foreign nbd device was set up by hand (nbd-client, qemu-nbd).
BlockDevice nbdInfo(BlockDevice d) {
  d.requestDepth = d.queueDepth;
  d.queueDepthSettable = false;
  d.workers = std::max<uint32_t>(d.workers, 1);
  d.foreignOwner = d.foreign ? "manual" : "";
  if (!d.foreign) d.directIoMode = d.directIo ? DirectIoMode::On : DirectIoMode::Auto;
  return d;
}

Result<BlockDevice> nbdInfo(Result<BlockDevice> r) {
  if (!r) return r.error();
  return nbdInfo(std::move(*r));
}

Error fixedAtSetup(std::string_view dev, const char* what) {
  return makeError(std::string(dev) + ": " + what +
                       " is a kernel loop setting; an nbd device's settings are fixed at setup "
                       "(detach and set it up again)",
                   ENOTSUP);
}

}  // namespace

Result<BlockSetupResult> NbdBackend::setup(int backingFd, const BackingInfo& backing,
                                           const BlockSetupOptions& o, uint32_t uid) {
  if (o.loop.offset != 0 || o.loop.sizeLimit != 0)
    return makeError("the nbd backend serves the whole backing file (no offset/size limit)",
                     EINVAL);
  if (o.loop.autoclear || o.loop.partscan)
    return makeError("the nbd backend has no autoclear/partscan", EINVAL);
  if (o.loop.queueDepth)
    return makeError(
        "--queue-depth is a kernel loop setting; the nbd backend's concurrency "
        "is --workers",
        EINVAL);
  NbdOptions no;
  no.workers = o.workers ? o.workers : 1;
  no.readOnly = o.loop.readOnly || backing.accessMode == O_RDONLY;
  no.blockSize = o.loop.blockSize;
  no.directIo = o.loop.directIo;
  no.timeoutSec = o.nbdTimeoutSec;
  no.serverCgroup = o.serverCgroup;
  no.callerPid = o.callerPid;
  auto d = m_.setup(backingFd, no, uid);
  if (!d) return d.error();
  BlockSetupResult r;
  r.device = nbdInfo(std::move(*d));
  if (no.readOnly && !o.loop.readOnly)
    r.notes.push_back("the backing file was opened read-only: the device is read-only");
  if (!r.device.directIo && o.loop.directIo != DirectIoMode::Off)
    r.notes.push_back("O_DIRECT refused by the backing file: the workers use buffered I/O");
  return r;
}

Result<std::vector<BlockDevice>> NbdBackend::list(bool includeForeign) {
  auto l = m_.list(includeForeign);
  if (!l) return l.error();
  for (auto& d : *l) d = nbdInfo(std::move(d));
  return l;
}
Result<BlockDevice> NbdBackend::show(std::string_view dev) {
  return nbdInfo(m_.show(dev));
}
Result<BlockDevice> NbdBackend::setDirectIO(std::string_view dev, bool, uint32_t, bool) {
  return fixedAtSetup(dev, "direct I/O");
}
Result<BlockDevice> NbdBackend::setBlockSize(std::string_view dev, uint32_t, uint32_t, bool) {
  return fixedAtSetup(dev, "the block size");
}
Result<BlockDevice> NbdBackend::setCapacity(std::string_view dev, uint32_t, bool) {
  return fixedAtSetup(dev, "the capacity");
}
Result<BlockDevice> NbdBackend::setAutoclear(std::string_view dev, bool, uint32_t, bool) {
  return fixedAtSetup(dev, "autoclear");
}
Result<BlockDevice> NbdBackend::setWorkers(std::string_view dev, int workers, uint32_t uid, bool) {
  return nbdInfo(m_.setWorkers(dev, workers, uid));
}
Result<BlockDevice> NbdBackend::setQueueDepth(std::string_view dev, uint32_t, uint32_t, bool) {
  return makeError(std::string(dev) +
                       ": queue depth is a kernel loop setting; the nbd backend's concurrency "
                       "is its worker count",
                   ENOTSUP);
}
Result<BlockDetachResult> NbdBackend::detach(std::string_view dev, uint32_t uid, bool force) {
  auto r = m_.detach(dev, uid, force);
  if (!r) return r.error();
  if (!r->detached) return makeError(r->name + " did not detach: " + r->note, EBUSY);
  return BlockDetachResult{true, false, r->note};
}

// ---- dispatcher --------------------------------------------------------------------------

Result<std::unique_ptr<BlockDevices>> BlockDevices::create(const Options& o) {
  auto lm = LoopManager::create(o.loop);
  if (!lm) return lm.error();
  NbdManagerOptions no;
  no.runDir = o.loop.runDir;
  no.sysRoot = o.loop.sysRoot;
  no.devRoot = o.loop.devRoot;
  no.serverPath = o.serverPath;
  return std::make_unique<BlockDevices>(std::move(*lm), std::make_unique<NbdManager>(no),
                                        detectBackends(o.loop.sysRoot, o.loop.devRoot),
                                        o.loop.sysRoot);
}

BlockDevices::BlockDevices(std::unique_ptr<LoopManager> loop, std::unique_ptr<NbdManager> nbd,
                           BackendAvailability avail, std::string sysRoot)
    : loop_(std::move(loop)),
      nbd_(std::move(nbd)),
      avail_(std::move(avail)),
      sysRoot_(std::move(sysRoot)),
      kernelB_(std::make_unique<KernelLoopBackend>(*loop_, sysRoot_)),
      nbdB_(std::make_unique<NbdBackend>(*nbd_)) {}

namespace {

Error unknownDev(std::string_view dev) {
  return makeError("\"" + std::string(dev) + "\" is neither a loop nor an nbd device", EINVAL);
}

}  // namespace

// One route for every verb on an existing device: by its name.
template <class F>
auto BlockDevices::route(std::string_view dev, F&& f)
    -> decltype(f(std::declval<BlockBackend&>())) {
  if (nbdB_->handles(dev)) return f(*nbdB_);
  if (kernelB_->handles(dev)) return f(*kernelB_);
  return unknownDev(dev);
}

Result<BlockSetupResult> BlockDevices::setup(int backingFd, const BlockSetupOptions& o,
                                             uint32_t uid) {
  if (o.workers != 0)
    if (auto v = validateWorkers(o.workers); !v) return v.error();
  if (auto v = validateLoopOptions(o.loop); !v) return v.error();
  // What the backing is, before which backend: a socket or a pipe gets the same answer on
  // every machine (with backend=nbd it answered NotSupported where nbd is missing). On the
  // block-device worker: fstat of a FUSE file can hang. The one look at the fd: the
  // backends get what it found.
  if (const int fl = ::fcntl(backingFd, F_GETFL); fl >= 0 && (fl & O_PATH) == O_PATH)
    return makeError("the backing file descriptor is O_PATH; open the file for reading", EINVAL);
  auto backing = loop_->kernel().inspectBacking(backingFd);
  if (!backing) return backing.error();
  if (!backing->isRegular && !backing->isBlockDevice)
    return makeError("the backing file must be a regular file or a block device", EINVAL);
  std::string dioWhy;
  if (o.backend == BackendKind::Auto && o.workers > 1 && o.loop.directIo != DirectIoMode::Off) {
    dioWhy =
        predictDirectIoRefusal(*backing, o.loop.offset, chooseBlockSize(o.loop, *backing).size);
    if (dioWhy.empty()) {
      // Nothing predicted it: ask the filesystem (tmpfs before 6.6 refuses O_DIRECT at open).
      // Same file, same access mode as the caller's fd: no rights added.
      const std::string self = "/proc/self/fd/" + std::to_string(backingFd);
      int f = ::open(self.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
      if (f < 0 && errno == EINVAL)
        dioWhy = "the backing filesystem does not support O_DIRECT";
      else if (f >= 0)
        ::close(f);
    }
  }
  auto choice = chooseBackend(o.backend, o.workers, o.loop.directIo, dioWhy, avail_);
  if (!choice) return choice.error();
  BlockBackend* b =
      choice->kind == BackendKind::Nbd ? static_cast<BlockBackend*>(nbdB_.get()) : kernelB_.get();
  auto r = b->setup(backingFd, *backing, o, uid);
  if (!r) return r.error();
  r->choice = *choice;
  if (choice->kind == BackendKind::Kernel && o.workers > 1) r->notes.push_back(choice->reason);
  return r;
}

Result<std::vector<BlockDevice>> BlockDevices::list(bool includeForeign) {
  auto l = kernelB_->list(includeForeign);
  if (!l) return l.error();
  // No nbd module (or no records yet) is no nbd devices, not a failed list.
  if (auto n = nbdB_->list(includeForeign)) l->insert(l->end(), n->begin(), n->end());
  return l;
}

Result<BlockDevice> BlockDevices::show(std::string_view dev) {
  return route(dev, [&](BlockBackend& b) { return b.show(dev); });
}
Result<BlockDevice> BlockDevices::setDirectIO(std::string_view dev, bool on, uint32_t uid,
                                              bool force) {
  return route(dev, [&](BlockBackend& b) { return b.setDirectIO(dev, on, uid, force); });
}
Result<BlockDevice> BlockDevices::setBlockSize(std::string_view dev, uint32_t size, uint32_t uid,
                                               bool force) {
  return route(dev, [&](BlockBackend& b) { return b.setBlockSize(dev, size, uid, force); });
}
Result<BlockDevice> BlockDevices::setCapacity(std::string_view dev, uint32_t uid, bool force) {
  return route(dev, [&](BlockBackend& b) { return b.setCapacity(dev, uid, force); });
}
Result<BlockDevice> BlockDevices::setAutoclear(std::string_view dev, bool on, uint32_t uid,
                                               bool force) {
  return route(dev, [&](BlockBackend& b) { return b.setAutoclear(dev, on, uid, force); });
}
Result<BlockDevice> BlockDevices::setWorkers(std::string_view dev, int workers, uint32_t uid,
                                             bool force) {
  return route(dev, [&](BlockBackend& b) { return b.setWorkers(dev, workers, uid, force); });
}
Result<BlockDevice> BlockDevices::setQueueDepth(std::string_view dev, uint32_t depth, uint32_t uid,
                                                bool force) {
  return route(dev, [&](BlockBackend& b) { return b.setQueueDepth(dev, depth, uid, force); });
}
Result<BlockDetachResult> BlockDevices::detach(std::string_view dev, uint32_t uid, bool force) {
  return route(dev, [&](BlockBackend& b) { return b.detach(dev, uid, force); });
}

}  // namespace cxiosync
