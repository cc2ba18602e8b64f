// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/devices/backend_devices.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cxiosync {

// ---- kernel loop -------------------------------------------------------------------------

bool KernelLoopBackend::handles(std::string_view dev) const {
  return static_cast<bool>(parseLoopName(dev));
}

BlockDeviceInfo KernelLoopBackend::toInfo(const LoopDeviceInfo& d) {
  BlockDeviceInfo b;
  b.name = d.name;
  b.path = d.path;
  b.backend = "kernel";
  b.backingFile = d.kernel.backingFile;
  b.sizeBytes = d.kernel.sizeBytes;
  b.readOnly = d.kernel.readOnly;
  b.directIo = d.kernel.directIo;
  b.workers = d.workers;  // one loop worker per issuing cgroup; no per-device count exists
  b.queueDepth = d.kernel.requestDepth;
  b.blockSize = d.kernel.logicalBlockSize;
  // Buffered: the worker handles one request at a time. Direct I/O: submitted
  // asynchronously, up to nr_requests at once.
  b.inFlightMax = static_cast<int>(d.inFlightMax);
  b.foreign = d.foreign;
  if (d.record) b.setupByUid = d.record->uid;
  b.workersSettableLive = false;
  if (d.record && !d.record->directIoNote.empty())
    b.note = "direct I/O off: " + d.record->directIoNote;
  return b;
}

Result<BlockSetupResult> KernelLoopBackend::setup(int backingFd, const BlockSetupOptions& o,
                                                  uint32_t uid) {
  LoopOptions lo = o.loop;
  if (o.queueDepth) lo.queueDepth = o.queueDepth;
  if (lo.queueDepth)
    if (auto v = validateQueueDepth(lo.queueDepth, loopHwQueueDepth(sysRoot_)); !v)
      return v.error();
  auto r = m_.setup(backingFd, lo, uid);
  if (!r) return r.error();
  BlockSetupResult out;
  out.notes = r->notes;
  if (!r->directIoNote.empty()) out.notes.push_back("direct I/O is off: " + r->directIoNote);
  auto again = m_.show(r->device.name);
  out.device = toInfo(again ? *again : r->device);
  out.deviceFd = std::move(r->deviceFd);
  return out;
}

Result<std::vector<BlockDeviceInfo>> KernelLoopBackend::list(bool includeForeign) {
  auto l = m_.list(includeForeign);
  if (!l) return l.error();
  std::vector<BlockDeviceInfo> out;
  for (const auto& d : *l) out.push_back(toInfo(d));
  return out;
}

Result<BlockDeviceInfo> KernelLoopBackend::show(std::string_view dev) {
  auto d = m_.show(dev);
  if (!d) return d.error();
  return toInfo(*d);
}

Result<BlockDeviceInfo> KernelLoopBackend::setWorkers(std::string_view dev, int workers, uint32_t,
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

Result<BlockDeviceInfo> KernelLoopBackend::setQueueDepth(std::string_view dev, uint32_t depth,
                                                         uint32_t uid, bool force) {
  auto after = m_.setQueueDepth(dev, depth, uid, force);
  if (!after) return after.error();
  return toInfo(*after);
}

Result<std::string> KernelLoopBackend::detach(std::string_view dev, uint32_t uid, bool force) {
  auto r = m_.detach(dev, uid, force);
  if (!r) return r.error();
  return r->lazy ? r->note : std::string();
}

// ---- nbd ---------------------------------------------------------------------------------

bool NbdBackend::handles(std::string_view dev) const {
  return static_cast<bool>(parseNbdName(dev));
}

Result<BlockSetupResult> NbdBackend::setup(int backingFd, const BlockSetupOptions& o,
                                           uint32_t uid) {
  if (o.loop.offset != 0 || o.loop.sizeLimit != 0)
    return makeError("the nbd backend serves the whole backing file (no offset/size limit)",
                     EINVAL);
  if (o.loop.autoclear || o.loop.partscan)
    return makeError("the nbd backend has no autoclear/partscan", EINVAL);
  if (o.queueDepth)
    return makeError(
        "--queue-depth is a kernel loop setting; the nbd backend's concurrency "
        "is --workers",
        EINVAL);
  NbdOptions no;
  no.workers = o.workers ? o.workers : 1;
  no.readOnly = o.loop.readOnly;
  no.blockSize = o.loop.blockSize;
  no.directIo = o.loop.directIo;
  no.timeoutSec = o.nbdTimeoutSec;
  no.serverCgroup = o.serverCgroup;
  no.callerPid = o.callerPid;
  if ((::fcntl(backingFd, F_GETFL) & O_ACCMODE) == O_RDONLY) no.readOnly = true;
  auto d = m_.setup(backingFd, no, uid);
  if (!d) return d.error();
  BlockSetupResult r;
  r.device = *d;
  if (no.readOnly && !o.loop.readOnly)
    r.notes.push_back("the backing file was opened read-only: the device is read-only");
  if (!d->directIo && o.loop.directIo != DirectIoMode::Off)
    r.notes.push_back("O_DIRECT refused by the backing file: the workers use buffered I/O");
  return r;
}

Result<std::vector<BlockDeviceInfo>> NbdBackend::list(bool includeForeign) {
  return m_.list(includeForeign);
}
Result<BlockDeviceInfo> NbdBackend::show(std::string_view dev) {
  return m_.show(dev);
}
Result<BlockDeviceInfo> NbdBackend::setWorkers(std::string_view dev, int workers, uint32_t uid,
                                               bool) {
  return m_.setWorkers(dev, workers, uid);
}
Result<BlockDeviceInfo> NbdBackend::setQueueDepth(std::string_view dev, uint32_t, uint32_t, bool) {
  return makeError(std::string(dev) +
                       ": queue depth is a kernel loop setting; the nbd backend's concurrency "
                       "is its worker count",
                   ENOTSUP);
}
Result<std::string> NbdBackend::detach(std::string_view dev, uint32_t uid, bool force) {
  auto r = m_.detach(dev, uid, force);
  if (!r) return r.error();
  if (!r->detached) return makeError(r->name + " did not detach: " + r->note, EBUSY);
  return r->note;
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

BlockBackend* BlockDevices::backendFor(std::string_view dev) {
  if (nbdB_->handles(dev)) return nbdB_.get();
  if (kernelB_->handles(dev)) return kernelB_.get();
  return nullptr;
}

Result<BlockSetupResult> BlockDevices::setup(int backingFd, const BlockSetupOptions& o,
                                             uint32_t uid) {
  if (o.workers != 0)
    if (auto v = validateWorkers(o.workers); !v) return v.error();
  // What the backing is, before which backend: a socket or a pipe gets the same answer on
  // every machine (with backend=nbd it answered NotSupported where nbd is missing). On the
  // block-device worker: fstat of a FUSE file can hang.
  struct stat st {};
  if (::fstat(backingFd, &st) != 0)
    return makeError(std::string("fstat of the backing file: ") + std::strerror(errno), errno);
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
    return makeError("the backing file must be a regular file or a block device", EINVAL);
  if (const int fl = ::fcntl(backingFd, F_GETFL); fl >= 0 && (fl & O_PATH) == O_PATH)
    return makeError("the backing file descriptor is O_PATH; open the file for reading", EINVAL);
  std::string dioWhy;
  if (o.backend == BackendKind::Auto && o.workers > 1 && o.loop.directIo != DirectIoMode::Off) {
    auto b = loop_->kernel().inspectBacking(backingFd);
    if (b) {
      LoopOptions lo = o.loop;
      dioWhy = predictDirectIoRefusal(*b, lo.offset, chooseBlockSize(lo, *b).size);
    }
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
  auto r = b->setup(backingFd, o, uid);
  if (!r) return r.error();
  r->choice = *choice;
  if (choice->kind == BackendKind::Kernel && o.workers > 1) r->notes.push_back(choice->reason);
  return r;
}

Result<std::vector<BlockDeviceInfo>> BlockDevices::list(bool includeForeign) {
  auto l = kernelB_->list(includeForeign);
  if (!l) return l.error();
  auto n = nbdB_->list(includeForeign);
  if (n) l->insert(l->end(), n->begin(), n->end());
  return l;
}

namespace {
Error unknownDev(std::string_view dev) {
  return makeError("\"" + std::string(dev) + "\" is neither a loop nor an nbd device", EINVAL);
}
}  // namespace

Result<BlockDeviceInfo> BlockDevices::show(std::string_view dev) {
  auto* b = backendFor(dev);
  if (!b) return unknownDev(dev);
  return b->show(dev);
}
Result<BlockDeviceInfo> BlockDevices::setWorkers(std::string_view dev, int workers, uint32_t uid,
                                                 bool force) {
  auto* b = backendFor(dev);
  if (!b) return unknownDev(dev);
  return b->setWorkers(dev, workers, uid, force);
}
Result<BlockDeviceInfo> BlockDevices::setQueueDepth(std::string_view dev, uint32_t depth,
                                                    uint32_t uid, bool force) {
  auto* b = backendFor(dev);
  if (!b) return unknownDev(dev);
  return b->setQueueDepth(dev, depth, uid, force);
}
Result<std::string> BlockDevices::detach(std::string_view dev, uint32_t uid, bool force) {
  auto* b = backendFor(dev);
  if (!b) return unknownDev(dev);
  return b->detach(dev, uid, force);
}

}  // namespace cxiosync
