// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/loop_wire.h"

#include <cerrno>

#include "dbus/sdbus_compat.h"
#include "dbus/wire.h"
#include "policy/quote.h"

namespace cxiosync::dbus::wire {

namespace {

Error invalid(std::string m) {
  return makeError(std::move(m), EINVAL);
}

}  // namespace

std::string loopObjectPath(const std::string& name) {
  return std::string(kLoopPathPrefix) + name;
}

std::string loopNameOfPath(const std::string& path) {
  const std::string prefix = kLoopPathPrefix;
  if (path.rfind(prefix, 0) != 0) return {};
  std::string name = path.substr(prefix.size());
  return validLoopName(name) ? name : std::string();
}

bool validLoopName(const std::string& name) {
  const size_t p = name.rfind("loop", 0) == 0 ? 4 : name.rfind("nbd", 0) == 0 ? 3 : 0;
  if (p == 0 || name.size() <= p || name.size() > p + 9) return false;
  for (size_t i = p; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return !(name.size() > p + 1 && name[p] == '0');
}

LoopProps toWire(const LoopInfo& d) {
  LoopProps p;
  p["Device"] = sdbus::Variant(text(d.device));
  p["BackingFile"] = sdbus::Variant(text(d.backingFile));
  p["Offset"] = sdbus::Variant(d.offset);
  p["SizeLimit"] = sdbus::Variant(d.sizeLimit);
  p["Size"] = sdbus::Variant(d.sizeBytes);
  p["ReadOnly"] = sdbus::Variant(d.readOnly);
  p["Autoclear"] = sdbus::Variant(d.autoclear);
  p["PartScan"] = sdbus::Variant(d.partscan);
  p["DirectIO"] = sdbus::Variant(d.directIo);
  p["DirectIOMode"] = sdbus::Variant(text(d.directIoMode));
  p["DirectIONote"] = sdbus::Variant(text(d.directIoNote));
  p["BlockSize"] = sdbus::Variant(d.blockSize);
  p["BlockSizeSource"] = sdbus::Variant(text(d.blockSizeSource));
  p["SetupByUid"] = sdbus::Variant(d.setupByUid);
  p["SetupRealtimeUsec"] = sdbus::Variant(d.setupRealtimeUsec);
  p["Foreign"] = sdbus::Variant(d.foreign);
  p["ForeignOwner"] = sdbus::Variant(text(d.foreignOwner));
  p["BackingDevice"] = sdbus::Variant(text(d.backingDevice));
  p["BackingDisk"] = sdbus::Variant(text(d.backingDisk));
  p["RequestDepth"] = sdbus::Variant(d.requestDepth);
  p["Backend"] = sdbus::Variant(text(d.backend));
  p["Workers"] = sdbus::Variant(d.workers);
  p["QueueDepth"] = sdbus::Variant(d.queueDepth);
  p["WorkersSettable"] = sdbus::Variant(d.workersSettable);
  p["QueueDepthSettable"] = sdbus::Variant(d.queueDepthSettable);
  p["ServerCgroup"] = sdbus::Variant(text(d.serverCgroup));
  return p;
}

Result<LoopInfo> loopFromWire(const LoopProps& o) {
  LoopInfo d;
  std::string bad;
  bool ok =
      takeOption(o, "Device", d.device, bad) && takeOption(o, "BackingFile", d.backingFile, bad) &&
      takeOption(o, "Offset", d.offset, bad) && takeOption(o, "SizeLimit", d.sizeLimit, bad) &&
      takeOption(o, "Size", d.sizeBytes, bad) && takeOption(o, "ReadOnly", d.readOnly, bad) &&
      takeOption(o, "Autoclear", d.autoclear, bad) && takeOption(o, "PartScan", d.partscan, bad) &&
      takeOption(o, "DirectIO", d.directIo, bad) &&
      takeOption(o, "DirectIOMode", d.directIoMode, bad) &&
      takeOption(o, "DirectIONote", d.directIoNote, bad) &&
      takeOption(o, "BlockSize", d.blockSize, bad) &&
      takeOption(o, "BlockSizeSource", d.blockSizeSource, bad) &&
      takeOption(o, "SetupByUid", d.setupByUid, bad) &&
      takeOption(o, "SetupRealtimeUsec", d.setupRealtimeUsec, bad) &&
      takeOption(o, "Foreign", d.foreign, bad) &&
      takeOption(o, "ForeignOwner", d.foreignOwner, bad) &&
      takeOption(o, "BackingDevice", d.backingDevice, bad) &&
      takeOption(o, "BackingDisk", d.backingDisk, bad) &&
      takeOption(o, "RequestDepth", d.requestDepth, bad) &&
      takeOption(o, "Backend", d.backend, bad) && takeOption(o, "Workers", d.workers, bad) &&
      takeOption(o, "QueueDepth", d.queueDepth, bad) &&
      takeOption(o, "WorkersSettable", d.workersSettable, bad) &&
      takeOption(o, "QueueDepthSettable", d.queueDepthSettable, bad) &&
      takeOption(o, "ServerCgroup", d.serverCgroup, bad);
  if (!ok)
    return makeError("daemon sent loop property '" + bad + "' with an unexpected type", EPROTO);
  auto slash = d.device.rfind('/');
  d.name = slash == std::string::npos ? d.device : d.device.substr(slash + 1);
  return d;
}

Result<LoopSetupRequest> parseLoopSetupOptions(const std::map<std::string, sdbus::Variant>& o) {
  LoopSetupRequest r;
  auto& opt = r.options;
  for (const auto& [key, v] : o) {
    auto want = [&](const char* sig) -> Status {
      if (std::string type = compat::typeOf(v); type != sig) {
        return invalid("option '" + key + "' must have type '" + sig + "', got '" + type + "'");
      }
      return Ok{};
    };
    Status st = Ok{};
    if (key == "read_only") {
      if (st = want("b"); st) opt.readOnly = v.get<bool>();
    } else if (key == "autoclear") {
      if (st = want("b"); st) opt.autoclear = v.get<bool>();
    } else if (key == "partscan") {
      if (st = want("b"); st) opt.partscan = v.get<bool>();
    } else if (key == "interactive") {
      if (st = want("b"); st) r.interactive = v.get<bool>();
    } else if (key == "offset") {
      if (st = want("t"); st) opt.offset = v.get<uint64_t>();
    } else if (key == "size_limit") {
      if (st = want("t"); st) opt.sizeLimit = v.get<uint64_t>();
    } else if (key == "block_size") {
      if (st = want("u"); st) opt.blockSize = v.get<uint32_t>();
    } else if (key == "direct_io") {
      if (st = want("s"); st) opt.directIo = v.get<std::string>();
    } else if (key == "backend") {
      if (st = want("s"); st) opt.backend = v.get<std::string>();
    } else if (key == "workers") {
      if (st = want("u"); st) opt.workers = v.get<uint32_t>();
    } else if (key == "queue_depth") {
      if (st = want("u"); st) opt.queueDepth = v.get<uint32_t>();
    } else if (key == "nbd_timeout") {
      if (st = want("u"); st) opt.nbdTimeoutSec = v.get<uint32_t>();
    } else if (key == "server_cgroup") {
      if (st = want("s"); st) {
        opt.serverCgroup = v.get<std::string>();
        if (opt.serverCgroup != "caller" && opt.serverCgroup != "daemon")
          st = invalid("server_cgroup " + quoteForMessage(opt.serverCgroup) +
                       " is not one of: caller, daemon");
      }
    } else {
      return invalid("unknown option " + quoteForMessage(key) +
                     " for LoopSetup (known: read_only, offset, size_limit, block_size, "
                     "direct_io, autoclear, partscan, backend, workers, queue_depth, "
                     "nbd_timeout, server_cgroup, interactive)");
    }
    if (!st) return st.error();
  }
  if (opt.directIo != "auto" && opt.directIo != "on" && opt.directIo != "off") {
    return invalid("direct_io " + quoteForMessage(opt.directIo) + " is not one of: auto, on, off");
  }
  if (opt.backend != "auto" && opt.backend != "kernel" && opt.backend != "nbd") {
    return invalid("backend " + quoteForMessage(opt.backend) + " is not one of: auto, kernel, nbd");
  }
  if (opt.workers > kMaxWorkers) {
    return invalid("workers " + std::to_string(opt.workers) + " is not between 1 and " +
                   std::to_string(kMaxWorkers) + " (0 = not asked)");
  }
  // The daemon checks the upper bound against the loop module's hw_queue_depth.
  if (opt.queueDepth != 0 && (opt.queueDepth < 4 || opt.queueDepth > 65536)) {
    return invalid("queue_depth " + std::to_string(opt.queueDepth) +
                   " is not between 4 and the loop module's hw_queue_depth (0 = the default)");
  }
  if (opt.nbdTimeoutSec > 86400) {
    return invalid("nbd_timeout " + std::to_string(opt.nbdTimeoutSec) +
                   " is more than a day (0 = the default)");
  }
  if (opt.backend == "kernel" && opt.nbdTimeoutSec) {
    return invalid("nbd_timeout applies to the nbd backend only");
  }
  // A kernel loop device has no server: the loop worker already charges the issuing cgroup.
  if (opt.backend == "kernel" && !opt.serverCgroup.empty()) {
    return invalid(
        "server_cgroup applies to the nbd backend only (a kernel loop device charges "
        "its backing I/O to the cgroup that issued it)");
  }
  // An explicit backend's combinations are bad values too, refused before authorization
  // (docs/dbus-api.md): the backends checked them only after it, so an unprivileged caller
  // was asked for a password (or, without polkit, refused) for a call that could never work.
  if (opt.backend == "kernel" && opt.workers > 1) {
    return invalid("workers " + std::to_string(opt.workers) +
                   " with the kernel backend (one worker per issuing cgroup): use backend nbd");
  }
  if (opt.backend == "nbd" && (opt.offset || opt.sizeLimit || opt.autoclear || opt.partscan)) {
    return invalid(
        "the nbd backend serves the whole file: no offset, size_limit, autoclear, "
        "partscan");
  }
  if (opt.backend == "nbd" && opt.queueDepth) {
    return invalid(
        "queue_depth is a kernel loop setting; the nbd backend's concurrency is "
        "workers");
  }
  const uint32_t b = opt.blockSize;
  if (b != 0 && (b < 512 || b > 65536 || (b & (b - 1)) != 0)) {
    return invalid("block_size " + std::to_string(b) +
                   " is not a power of two between 512 and 65536 (0 = let cxiosync choose)");
  }
  if (opt.offset > static_cast<uint64_t>(INT64_MAX) ||
      opt.sizeLimit > static_cast<uint64_t>(INT64_MAX)) {
    return invalid("offset and size_limit must be below 2^63");
  }
  return r;
}

bool loopSetupNeedsCallerPid(const LoopSetupOptions& o, uint32_t uid) {
  if (o.backend == "kernel") return false;
  return o.serverCgroup == "caller" || (o.serverCgroup.empty() && uid != 0);
}

std::map<std::string, sdbus::Variant> loopSetupOptionsToWire(const LoopSetupRequest& r) {
  std::map<std::string, sdbus::Variant> o;
  const auto& opt = r.options;
  if (opt.readOnly) o["read_only"] = sdbus::Variant(true);
  if (opt.offset) o["offset"] = sdbus::Variant(opt.offset);
  if (opt.sizeLimit) o["size_limit"] = sdbus::Variant(opt.sizeLimit);
  if (opt.blockSize) o["block_size"] = sdbus::Variant(opt.blockSize);
  if (opt.directIo != "auto") o["direct_io"] = sdbus::Variant(opt.directIo);
  if (opt.autoclear) o["autoclear"] = sdbus::Variant(true);
  if (opt.partscan) o["partscan"] = sdbus::Variant(true);
  if (opt.backend != "auto") o["backend"] = sdbus::Variant(opt.backend);
  if (opt.workers) o["workers"] = sdbus::Variant(opt.workers);
  if (opt.queueDepth) o["queue_depth"] = sdbus::Variant(opt.queueDepth);
  if (opt.nbdTimeoutSec) o["nbd_timeout"] = sdbus::Variant(opt.nbdTimeoutSec);
  if (!opt.serverCgroup.empty()) o["server_cgroup"] = sdbus::Variant(opt.serverCgroup);
  if (r.interactive) o["interactive"] = sdbus::Variant(true);
  return o;
}

Result<LoopCallOptions> parseLoopCallOptions(const std::map<std::string, sdbus::Variant>& o,
                                             bool listCall) {
  LoopCallOptions r;
  for (const auto& [key, v] : o) {
    bool* target = nullptr;
    if (key == "interactive") {
      target = &r.interactive;
    } else if (key == "force" && !listCall) {
      target = &r.force;
    } else if (key == "all" && listCall) {
      target = &r.all;
    } else {
      return invalid("unknown option " + quoteForMessage(key) + " for this method");
    }
    if (std::string type = compat::typeOf(v); type != "b") {
      return invalid("option '" + key + "' must be a boolean (b), got type '" + type + "'");
    }
    *target = v.get<bool>();
  }
  return r;
}

}  // namespace cxiosync::dbus::wire
