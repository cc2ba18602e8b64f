// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/loop/loop_manager.h"

#include "daemon/blockdev/backend.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>

namespace cxiosync {

namespace {

bool retryable(int code) {
  return code == EBUSY || code == EAGAIN;
}

Error prefixed(const std::string& prefix, const Error& e) {
  return makeError(prefix + e.message, e.code);
}

}  // namespace

const char* loopAccessName(LoopAccess a) {
  switch (a) {
    case LoopAccess::Allowed:
      return "allowed";
    case LoopAccess::NeedsOthersAuthorization:
      return "needs-others-authorization";
    case LoopAccess::Refused:
      return "refused";
  }
  return "refused";
}

LoopAccess loopAccess(const LoopDeviceInfo& d, uint32_t callerUid, bool force) {
  if (d.foreign || !d.record)
    return callerUid == 0 && force ? LoopAccess::Allowed : LoopAccess::Refused;
  if (d.record->uid == callerUid || callerUid == 0) return LoopAccess::Allowed;
  return LoopAccess::NeedsOthersAuthorization;
}

Result<std::unique_ptr<LoopManager>> LoopManager::create(const LoopManagerOptions& o) {
  LinuxLoopKernelOptions ko;
  ko.devRoot = o.devRoot;
  ko.sysRoot = o.sysRoot;
  ko.privateNodeDir = o.runDir;
  ko.nodeTimeout = o.nodeTimeout;
  auto k = LinuxLoopKernel::open(ko);
  if (!k) return k.error();
  return std::make_unique<LoopManager>(std::move(*k), o);
}

LoopManager::LoopManager(std::unique_ptr<LoopKernel> kernel, LoopManagerOptions o)
    : kernel_(std::move(kernel)), opts_(std::move(o)), store_(opts_.runDir) {
  if (!opts_.now) opts_.now = [] { return static_cast<int64_t>(::time(nullptr)); };
  if (opts_.maxAttempts < 1) opts_.maxAttempts = 1;
}

Result<std::vector<LoopRecord>> LoopManager::loadRecords() {
  auto r = store_.load();
  if (!r && r.error().code == EINVAL) {
    // A corrupt state file must not make every device look foreign forever: set it aside.
    store_.quarantine();
    return std::vector<LoopRecord>{};
  }
  return r;
}

Status LoopManager::updateRecords(const std::function<void(std::vector<LoopRecord>&)>& change) {
  auto lk = store_.lock();
  if (!lk) return lk.error();
  auto recs = loadRecords();
  if (!recs) return recs.error();
  change(*recs);
  return store_.save(*recs);
}

Result<ReconcileResult> LoopManager::reconcile() {
  auto lk = store_.lock();
  if (!lk) return lk.error();
  auto recs = loadRecords();
  if (!recs) return recs.error();
  std::map<int, LoopKernelState> kernel;
  for (const auto& r : *recs) {
    auto st = kernel_->sysfs().read(r.index);
    if (!st) continue;  // gone
    if (st->bound) {
      if (auto fd = kernel_->openDevice(r.index, false, false)) {
        if (auto s = kernel_->getStatus(fd->get())) {
          st->backingFsDevice = s->device;
          st->backingInode = s->inode;
        }
      }
    }
    kernel[r.index] = *st;
  }
  auto res = reconcileLoopRecords(std::move(*recs), kernel);
  for (const auto& why : store_.skipped()) res.dropped.push_back({LoopRecord{}, why});
  if (auto s = store_.save(res.kept); !s) return s.error();
  return res;
}

Result<LoopDeviceInfo> LoopManager::info(int index, const std::vector<LoopRecord>& records) {
  auto st = kernel_->sysfs().read(index);
  if (!st) return st.error();
  LoopDeviceInfo d;
  d.name = "loop" + std::to_string(index);
  d.path = kernel_->devicePath(index);
  if (st->bound) {
    if (auto fd = kernel_->openDevice(index, false, false)) {
      if (auto s = kernel_->getStatus(fd->get())) {
        st->backingFsDevice = s->device;
        st->backingInode = s->inode;
        // The device the loop re-issues I/O to: a block device backing is itself that
        // device; a file's is the device of its filesystem (none for tmpfs & co: major 0).
        if (s->rdevice.major != 0)
          d.backingDevice = s->rdevice;
        else if (s->device.major != 0)
          d.backingDevice = s->device;
        if (d.backingDevice) d.backingDisk = kernel_->sysfs().wholeDisk(*d.backingDevice);
      }
    }
  }
  d.kernel = *st;
  d.foreign = true;
  for (const auto& r : records) {
    if (r.index != index || !st->bound) continue;
    std::map<int, LoopKernelState> k{{index, *st}};
    auto rr = reconcileLoopRecords({r}, k);
    if (!rr.kept.empty()) {
      d.foreign = false;
      d.record = r;
    }
    break;
  }
  if (d.foreign) d.foreignOwner = guessForeignOwner(st->backingFile);
  d.workers = 1;
  d.inFlightMax = st->directIo && st->requestDepth ? st->requestDepth : 1;
  return d;
}

Result<std::vector<LoopDeviceInfo>> LoopManager::list(bool includeForeign) {
  auto recs = loadRecords();
  if (!recs) return recs.error();
  auto idx = kernel_->sysfs().listIndices();
  if (!idx) return idx.error();
  std::vector<LoopDeviceInfo> out;
  for (int i : *idx) {
    auto d = info(i, *recs);
    if (!d) continue;  // vanished while we looked
    if (!d->kernel.bound) continue;
    if (d->foreign && !includeForeign) continue;
    out.push_back(std::move(*d));
  }
  return out;
}

Result<LoopDeviceInfo> LoopManager::show(std::string_view dev) {
  auto index = parseLoopName(dev);
  if (!index) return index.error();
  auto recs = loadRecords();
  if (!recs) return recs.error();
  auto d = info(*index, *recs);
  if (!d) {
    if (isGone(d.error()))
      return makeError("loop" + std::to_string(*index) + " does not exist", ENOENT);
    return d.error();
  }
  if (!d->kernel.bound) return makeError(d->name + " is not bound to a backing file", ENOENT);
  return d;
}

std::string LoopManager::explainRefusal(const BackingInfo& b, const LoopOptions& o,
                                        uint32_t blockSize) {
  std::string why = predictDirectIoRefusal(b, o.offset, blockSize);
  if (!why.empty()) return why;
  const std::string fs = fsMagicName(b.fsMagic);
  if (!b.isBlockDevice && b.fsDevice.major == 0 && !b.dioAlignKnown)
    return "the kernel refused direct I/O: the backing filesystem" +
           (fs.empty() ? std::string() : " (" + fs + ")") +
           " has no block device and reports no direct-I/O support";
  return "the kernel refused direct I/O (block size " +
         std::to_string(blockSize ? blockSize : 512) + ", offset " + std::to_string(o.offset) +
         ", backing " + (fs.empty() ? std::string("filesystem") : fs) +
         " with direct-I/O alignment " +
         (b.dioAlignKnown ? std::to_string(b.dioOffsetAlign) : std::string("unknown")) + ")";
}

bool LoopManager::waitUnbound(int index) {
  const auto deadline = std::chrono::steady_clock::now() + opts_.detachWait;
  while (true) {
    auto st = kernel_->sysfs().read(index);
    if (!st || !st->bound) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    kernel_->sleepFor(std::chrono::milliseconds(10));
  }
}

void LoopManager::teardown(int index, UniqueFd devFd) {
  (void)kernel_->clearFd(devFd.get());
  devFd.reset();  // newer kernels finish the clear on the last close
  waitUnbound(index);
}

namespace {

// What the backing file allows: readable, a file or a block device, the offset inside it.
// A read-only fd makes a read-only device (noted).
Status checkBacking(const BackingInfo& b, LoopOptions& o, LoopSetupResult& res) {
  if (b.accessMode == O_WRONLY)
    return makeError("the backing file descriptor is write-only; it must be open for reading",
                     EBADF);
  if (!b.isRegular && !b.isBlockDevice)
    return makeError("the backing file must be a regular file or a block device", EINVAL);
  if (b.accessMode == O_RDONLY && !o.readOnly) {
    // The caller's rights are what count: a read-only fd never yields a writable device.
    o.readOnly = true;
    res.notes.push_back("the backing file was opened read-only: the device is read-only");
  }
  if (o.offset > 0 && o.offset >= b.size)
    return makeError("offset " + std::to_string(o.offset) + " is at or beyond the end of the " +
                         "backing file (" + std::to_string(b.size) + " bytes)",
                     EINVAL);
  return Ok{};
}

// Whether to ask for direct I/O: not when a refusal is foreseeable (an error with
// direct-io=on; with auto a note, and the block size goes back to the default).
Result<bool> planDirectIo(const BackingInfo& b, const LoopOptions& o, BlockSizeChoice& bs,
                          LoopSetupResult& res) {
  res.directIoRequested = o.directIo != DirectIoMode::Off;
  if (!res.directIoRequested) return false;
  std::string why = predictDirectIoRefusal(b, o.offset, bs.size);
  if (why.empty()) return true;
  if (o.directIo == DirectIoMode::On)
    return makeError("direct I/O is not possible: " + why, EINVAL);
  res.directIoNote = why;
  if (bs.source != BlockSizeSource::Caller) bs = {0, BlockSizeSource::Default};
  return false;
}

loop_config makeConfig(int backingFd, const BackingInfo& b, const LoopOptions& o,
                       uint32_t blockSize, bool wantDio) {
  loop_config cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.fd = static_cast<uint32_t>(backingFd);
  cfg.block_size = blockSize;
  cfg.info.lo_offset = o.offset;
  cfg.info.lo_sizelimit = o.sizeLimit;
  cfg.info.lo_flags = (o.readOnly ? LO_FLAGS_READ_ONLY : 0) |
                      (o.autoclear ? LO_FLAGS_AUTOCLEAR : 0) |
                      (o.partscan ? LO_FLAGS_PARTSCAN : 0) | (wantDio ? LO_FLAGS_DIRECT_IO : 0);
  std::strncpy(reinterpret_cast<char*>(cfg.info.lo_file_name), b.path.c_str(), LO_NAME_SIZE - 1);
  return cfg;
}

}  // namespace

Result<LoopSetupResult> LoopManager::setup(int backingFd, const LoopOptions& requested,
                                           uint32_t callerUid) {
  if (auto v = validateLoopOptions(requested); !v) return v.error();
  auto bi = kernel_->inspectBacking(backingFd);
  if (!bi) return bi.error();
  return setup(backingFd, *bi, requested, callerUid);
}

Result<LoopSetupResult> LoopManager::setup(int backingFd, const BackingInfo& b,
                                           const LoopOptions& requested, uint32_t callerUid) {
  LoopOptions o = requested;
  LoopSetupResult res;
  if (auto c = checkBacking(b, o, res); !c) return c.error();
  BlockSizeChoice bs = chooseBlockSize(o, b);
  auto wantDio = planDirectIo(b, o, bs, res);
  if (!wantDio) return wantDio.error();

  auto bound = bindFree(makeConfig(backingFd, b, o, bs.size, *wantDio), o, res);
  if (!bound) return bound.error();
  Bound& d = *bound;
  auto st = readBack(d, o);
  if (!st) return st.error();
  if (*wantDio && !st->directIo) {
    if (auto s = settleDirectIo(d, b, o, bs, *st, res); !s) return s.error();
  }
  if (auto q = applyQueueDepth(d, o, *st, res); !q) return q.error();

  LoopRecord rec;
  rec.index = d.index;
  rec.uid = callerUid;
  rec.createdUnix = opts_.now();
  rec.backingFsDevice = b.fsDevice;
  rec.backingInode = b.inode;
  rec.backingFile = b.path;
  rec.options = requested;
  rec.directIoNote = res.directIoNote;
  rec.blockSizeChosen = bs.size;
  rec.blockSizeSource = bs.source;
  // Read after every step of ours above, so the record holds the sequence number of the
  // attach we made (none of our later changes moves it; only an attach or detach does).
  if (auto now = kernel_->sysfs().read(d.index); now && now->diskseq) rec.diskseq = *now->diskseq;
  if (auto r = recordOwner(d, rec); !r) return r.error();
  releaseDeviceLock(d.lock);  // configured, read back and recorded: udev may probe it now

  auto shown = info(d.index, {rec});
  if (!shown) return shown.error();
  res.device = std::move(*shown);
  res.directIoEffective = res.device.kernel.directIo;
  res.blockSize = res.device.kernel.logicalBlockSize;
  res.blockSizeSource = bs.source;
  res.deviceFd = std::move(d.dev);
  return res;
}

Result<LoopManager::Bound> LoopManager::bindFree(const loop_config& cfg, const LoopOptions& o,
                                                 LoopSetupResult& res) {
  Error last = makeError("no attempt made", EAGAIN);
  for (int attempt = 1; attempt <= opts_.maxAttempts; ++attempt) {
    res.attempts = attempt;
    if (attempt > 1) kernel_->sleepFor(opts_.retryDelay);
    auto free = kernel_->getFree();
    if (!free) {
      last = free.error();
      if (retryable(last.code)) continue;
      return prefixed("no free loop device: ", last);
    }
    auto fd = kernel_->openDevice(*free, !o.readOnly, true);
    if (!fd) {
      last = fd.error();
      // Removed (LOOP_CTL_REMOVE) between GET_FREE and open: take another.
      if (retryable(last.code) || last.code == ENXIO || last.code == ENODEV) continue;
      return last;
    }
    auto lock = kernel_->lockDevice(fd->get());
    if (!lock) {
      // Locked: another program is configuring it (or udev is probing it). Not ours.
      last = lock.error();
      continue;
    }
    Bound d{*free, std::move(*fd), std::move(*lock)};
    auto bound = bind(d, cfg, res, last);
    if (!bound) return bound.error();
    if (*bound) return d;
  }
  return makeError("could not set up a loop device after " + std::to_string(res.attempts) +
                       " attempts (other loop users kept taking the free device): " + last.message,
                   last.code);
}

Result<bool> LoopManager::bind(Bound& d, const loop_config& cfg, LoopSetupResult& res,
                               Error& last) {
  if (!noLoopConfigure_) {
    auto c = kernel_->configure(d.dev.get(), cfg);
    if (c) {
      res.usedLoopConfigure = true;
      return true;
    }
    last = c.error();
    // EBUSY: another process bound this device between GET_FREE and CONFIGURE. It is
    // theirs now: never clear it; take another.
    if (retryable(last.code)) return false;
    if (last.code == ENOTTY)
      noLoopConfigure_ = true;  // kernel before 5.8
    else if (last.code != EINVAL)
      return last;  // configure is atomic: nothing to undo
    // ENOTTY/EINVAL: the old two-step way on the same device.
  }
  res.usedLoopConfigure = false;
  auto s = kernel_->setFd(d.dev.get(), static_cast<int>(cfg.fd));
  if (!s) {
    last = s.error();
    if (retryable(last.code)) return false;  // not ours: never clear
    return last;
  }
  // From here the device is ours: undo on failure.
  loop_info64 info = cfg.info;
  info.lo_flags &= ~static_cast<uint32_t>(LO_FLAGS_DIRECT_IO | LO_FLAGS_READ_ONLY);
  if (auto st = kernel_->setStatus(d.dev.get(), info); !st) {
    teardown(d.index, std::move(d.dev));
    return st.error();
  }
  if (cfg.block_size != 0) {
    if (auto st = kernel_->setBlockSize(d.dev.get(), cfg.block_size); !st) {
      teardown(d.index, std::move(d.dev));
      return st.error();
    }
  }
  const bool wantDio = (cfg.info.lo_flags & LO_FLAGS_DIRECT_IO) != 0;
  if (wantDio) (void)kernel_->setDirectIo(d.dev.get(), true);  // judged by the read-back
  return true;
}

Result<LoopKernelState> LoopManager::readBack(Bound& d, const LoopOptions& o) {
  auto st = kernel_->sysfs().read(d.index);
  if (!st) {
    teardown(d.index, std::move(d.dev));
    return prefixed("reading back the new device: ", st.error());
  }
  if (!st->bound) {
    return makeError("loop" + std::to_string(d.index) + " lost its backing file right after " +
                         "setup (autoclear with no opener?)",
                     EIO);
  }
  if (o.readOnly && !st->readOnly) {
    teardown(d.index, std::move(d.dev));
    return makeError("the kernel did not make the device read-only", EIO);
  }
  return st;
}

Status LoopManager::settleDirectIo(Bound& d, const BackingInfo& b, const LoopOptions& o,
                                   BlockSizeChoice& bs, LoopKernelState& st, LoopSetupResult& res) {
  // The block size was ours to choose and nothing told us the alignment: try the largest
  // common logical block size once (512-byte guesses fail on 4Kn backing disks).
  if (bs.source != BlockSizeSource::Caller && !b.dioAlignKnown && st.logicalBlockSize < 4096) {
    const uint32_t before = st.logicalBlockSize;
    if (kernel_->setBlockSize(d.dev.get(), 4096) && kernel_->setDirectIo(d.dev.get(), true)) {
      if (auto again = kernel_->sysfs().read(d.index); again && again->directIo) {
        st = std::move(*again);
        bs = {4096, BlockSizeSource::Probe};
      }
    }
    if (!st.directIo && before != 0) (void)kernel_->setBlockSize(d.dev.get(), before);
  }
  if (!st.directIo) {
    const std::string why = explainRefusal(b, o, bs.size);
    if (o.directIo == DirectIoMode::On) {
      teardown(d.index, std::move(d.dev));
      return makeError("direct I/O refused: " + why, EINVAL);
    }
    res.directIoNote = why;
  }
  return Ok{};
}

Status LoopManager::applyQueueDepth(Bound& d, const LoopOptions& o, LoopKernelState& st,
                                    LoopSetupResult& res) {
  // nr_requests survives a detach: without an explicit depth, restore the module default
  // (hw_queue_depth) so an earlier user's setting does not leak into this device.
  const uint32_t hw = loopHwQueueDepth(kernel_->sysfs().root());
  const uint32_t want = o.queueDepth ? o.queueDepth : hw;
  if (want != 0 && st.requestDepth != want) {
    Status q = o.queueDepth ? validateQueueDepth(o.queueDepth, hw) : Status(Ok{});
    if (q) q = writeQueueDepth(kernel_->sysfs().root(), "loop" + std::to_string(d.index), want);
    auto back = kernel_->sysfs().read(d.index);
    if (q && (!back || back->requestDepth != want))
      q = makeError("queue depth reads back as " + std::to_string(back ? back->requestDepth : 0),
                    EIO);
    if (!q && o.queueDepth) {
      teardown(d.index, std::move(d.dev));
      return prefixed("queue depth " + std::to_string(o.queueDepth) + " not applied: ", q.error());
    }
    if (!q) res.notes.push_back("could not restore the default queue depth: " + q.error().message);
  }
  if (auto again = kernel_->sysfs().read(d.index)) st = std::move(*again);
  return Ok{};
}

Status LoopManager::recordOwner(Bound& d, const LoopRecord& rec) {
  const int index = d.index;
  if (auto s = updateRecords([&](std::vector<LoopRecord>& recs) {
        recs.erase(std::remove_if(recs.begin(), recs.end(),
                                  [&](const LoopRecord& r) { return r.index == index; }),
                   recs.end());
        recs.push_back(rec);
        std::sort(recs.begin(), recs.end(),
                  [](const LoopRecord& a, const LoopRecord& x) { return a.index < x.index; });
      });
      !s) {
    // No record, no device: an unrecorded device would look foreign and be stuck.
    teardown(index, std::move(d.dev));
    return prefixed("recording ownership failed (device removed again): ", s.error());
  }
  return Ok{};
}

Result<LoopManager::Target> LoopManager::mutable_(std::string_view dev, uint32_t callerUid,
                                                  bool force) {
  auto d = show(dev);
  if (!d) return d.error();
  if (loopAccess(*d, callerUid, force) == LoopAccess::Refused) {
    std::string who = foreignOwnerName(d->foreignOwner);
    return makeError(d->name + " was not set up by cxiosync" +
                         (who.empty() ? std::string() : " (probably " + who + ")") +
                         "; only root with force may change it",
                     EPERM);
  }
  return Target{d->kernel.index, std::move(*d)};
}

Result<LoopDeviceInfo> LoopManager::setDirectIO(std::string_view dev, bool on, uint32_t callerUid,
                                                bool force) {
  auto t = mutable_(dev, callerUid, force);
  if (!t) return t.error();
  auto fd = kernel_->openDevice(t->index, !t->info.kernel.readOnly, true);
  if (!fd) return fd.error();
  auto s = kernel_->setDirectIo(fd->get(), on);
  fd->reset();
  auto after = show(dev);
  if (!after) return after.error();
  if (on && (!s || !after->kernel.directIo)) {
    std::string why = s ? "the kernel kept buffered I/O" : s.error().message;
    return makeError(after->name + ": direct I/O refused: " + why + " (logical block size " +
                         std::to_string(after->kernel.logicalBlockSize) + ", offset " +
                         std::to_string(after->kernel.offset) + ")",
                     EINVAL);
  }
  if (!s) return s.error();
  if (!after->foreign) {
    (void)updateRecords([&](std::vector<LoopRecord>& recs) {
      for (auto& r : recs)
        if (r.index == t->index) {
          r.options.directIo = on ? DirectIoMode::On : DirectIoMode::Off;
          r.directIoNote.clear();
        }
    });
  }
  return show(dev);
}

Result<LoopDeviceInfo> LoopManager::setBlockSize(std::string_view dev, uint32_t size,
                                                 uint32_t callerUid, bool force) {
  LoopOptions probe;
  probe.blockSize = size;
  if (size == 0) return makeError("block size must be given (512..65536, a power of two)", EINVAL);
  if (auto v = validateLoopOptions(probe); !v) return v.error();
  auto t = mutable_(dev, callerUid, force);
  if (!t) return t.error();
  auto fd = kernel_->openDevice(t->index, !t->info.kernel.readOnly, true);
  if (!fd) return fd.error();
  auto s = kernel_->setBlockSize(fd->get(), size);
  fd->reset();
  if (!s) return prefixed(t->info.name + ": ", s.error());
  if (!t->info.foreign) {
    (void)updateRecords([&](std::vector<LoopRecord>& recs) {
      for (auto& r : recs)
        if (r.index == t->index) {
          r.options.blockSize = size;
          r.blockSizeChosen = size;
          r.blockSizeSource = BlockSizeSource::Caller;
        }
    });
  }
  return show(dev);
}

Result<LoopDeviceInfo> LoopManager::setQueueDepth(std::string_view dev, uint32_t depth,
                                                  uint32_t callerUid, bool force) {
  if (auto v = validateQueueDepth(depth, loopHwQueueDepth(kernel_->sysfs().root())); !v)
    return v.error();
  auto t = mutable_(dev, callerUid, force);
  if (!t) return t.error();
  if (auto w = writeQueueDepth(kernel_->sysfs().root(), t->info.name, depth); !w) return w.error();
  auto after = show(dev);
  if (!after) return after.error();
  if (after->kernel.requestDepth != depth)
    return makeError(after->name + ": queue depth reads back as " +
                         std::to_string(after->kernel.requestDepth) + ", not " +
                         std::to_string(depth),
                     EIO);
  if (!after->foreign) {
    (void)updateRecords([&](std::vector<LoopRecord>& recs) {
      for (auto& r : recs)
        if (r.index == t->index) r.options.queueDepth = depth;
    });
  }
  return show(dev);
}

Result<LoopDeviceInfo> LoopManager::setCapacity(std::string_view dev, uint32_t callerUid,
                                                bool force) {
  auto t = mutable_(dev, callerUid, force);
  if (!t) return t.error();
  auto fd = kernel_->openDevice(t->index, !t->info.kernel.readOnly, true);
  if (!fd) return fd.error();
  auto s = kernel_->setCapacity(fd->get());
  fd->reset();
  if (!s) return prefixed(t->info.name + ": ", s.error());
  return show(dev);
}

Result<LoopDeviceInfo> LoopManager::setAutoclear(std::string_view dev, bool on, uint32_t callerUid,
                                                 bool force) {
  auto t = mutable_(dev, callerUid, force);
  if (!t) return t.error();
  auto fd = kernel_->openDevice(t->index, false, true);
  if (!fd) return fd.error();
  auto st = kernel_->getStatus(fd->get());
  if (!st) return st.error();
  loop_info64 info;
  std::memset(&info, 0, sizeof info);
  // LOOP_SET_STATUS64 sets every field: carry the current ones over.
  info.lo_offset = st->offset;
  info.lo_sizelimit = st->sizeLimit;
  info.lo_flags = on ? (st->flags | LO_FLAGS_AUTOCLEAR) : (st->flags & ~LO_FLAGS_AUTOCLEAR);
  auto s = kernel_->setStatus(fd->get(), info);
  if (!s) return prefixed(t->info.name + ": ", s.error());
  if (on) {
    // Our fd may be the last one: closing it detaches the device. That is what the caller
    // asked for; report the state after the close.
    fd->reset();
    auto after = show(dev);
    if (!after && after.error().code == ENOENT) {
      (void)updateRecords([&](std::vector<LoopRecord>& recs) {
        std::erase_if(recs, [&](const LoopRecord& r) { return r.index == t->index; });
      });
      // Nobody else held it: the kernel detached it at once. Report that, not an error.
      LoopDeviceInfo gone = t->info;
      gone.kernel.bound = false;
      gone.kernel.autoclear = true;
      return gone;
    }
    return after;
  }
  fd->reset();
  return show(dev);
}

Result<LoopDetachResult> LoopManager::detach(std::string_view dev, uint32_t callerUid, bool force) {
  auto t = mutable_(dev, callerUid, force);
  if (!t) return t.error();
  LoopDetachResult r;
  r.name = t->info.name;
  auto fd = kernel_->openDevice(t->index, false, true);
  if (!fd) return fd.error();
  auto s = kernel_->clearFd(fd->get());
  if (!s && s.error().code == EBUSY) {
    // Older kernels refuse outright while the device is open elsewhere: do what losetup -d
    // does on newer ones and let the last close detach it.
    auto st = kernel_->getStatus(fd->get());
    if (!st) return st.error();
    loop_info64 info;
    std::memset(&info, 0, sizeof info);
    info.lo_offset = st->offset;
    info.lo_sizelimit = st->sizeLimit;
    info.lo_flags = st->flags | LO_FLAGS_AUTOCLEAR;
    if (auto a = kernel_->setStatus(fd->get(), info); !a)
      return prefixed(r.name + " is busy and autoclear could not be set: ", a.error());
  } else if (!s) {
    if (s.error().code == ENXIO) {
      r.detached = true;
      r.note = "already detached";
    } else {
      return prefixed(r.name + ": ", s.error());
    }
  }
  fd->reset();  // since 5.x the kernel finishes the clear on the last close
  r.detached = waitUnbound(t->index);
  if (!r.detached) {
    r.lazy = true;
    r.note = r.name + " is still in use (mounted or open): autoclear is set, it detaches when " +
             "the last user closes it";
  } else {
    (void)updateRecords([&](std::vector<LoopRecord>& recs) {
      std::erase_if(recs, [&](const LoopRecord& x) { return x.index == t->index; });
    });
  }
  return r;
}

}  // namespace cxiosync
