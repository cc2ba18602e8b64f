// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/loop_wire.h"

#include <cerrno>

#include "dbus/loop_props.h"
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

std::string wireValue(const std::string& v) {
  return text(v);
}
std::string wireValue(BackendKind v) {
  return backendKindName(v);
}
std::string wireValue(const std::optional<DirectIoMode>& v) {
  return v ? directIoModeName(*v) : "";
}

template <class T>
bool typed(const sdbus::Variant& v, T& out) {
  if (!v.containsValueOfType<T>()) return false;
  out = v.get<T>();
  return true;
}
bool fromWireValue(const sdbus::Variant& v, std::string& out) {
  return typed(v, out);
}
bool fromWireValue(const sdbus::Variant& v, uint64_t& out) {
  return typed(v, out);
}
bool fromWireValue(const sdbus::Variant& v, uint32_t& out) {
  return typed(v, out);
}
bool fromWireValue(const sdbus::Variant& v, bool& out) {
  return typed(v, out);
}
// A name this client does not know (a newer daemon's) reads as kernel / none: display only.
bool fromWireValue(const sdbus::Variant& v, BackendKind& out) {
  std::string name;
  if (!typed(v, name)) return false;
  out = backendKindFromName(name).value_or(BackendKind::Kernel);
  return true;
}
bool fromWireValue(const sdbus::Variant& v, std::optional<DirectIoMode>& out) {
  std::string name;
  if (!typed(v, name)) return false;
  out = directIoModeFromName(name);
  return true;
}

namespace {

template <class F>
std::string signatureOf(F field) {
  return compat::typeOf(sdbus::Variant(wireValue(field)));
}

}  // namespace

const std::vector<LoopProperty>& loopProperties() {
#define CXIOSYNC_LOOP_PROPERTY_ROW(P, field, key)                                    \
  LoopProperty{#P, signatureOf(LoopInfo{}.field), key,                               \
               [](const LoopInfo& d) { return sdbus::Variant(wireValue(d.field)); }, \
               [](LoopInfo& d, const sdbus::Variant& v) { return fromWireValue(v, d.field); }},
  static const std::vector<LoopProperty> rows = {
      CXIOSYNC_LOOP_PROPERTIES(CXIOSYNC_LOOP_PROPERTY_ROW)};
#undef CXIOSYNC_LOOP_PROPERTY_ROW
  return rows;
}

LoopProps toWire(const LoopInfo& d) {
  LoopProps p;
  for (const auto& row : loopProperties()) p[row.name] = row.get(d);
  return p;
}

Result<LoopInfo> loopFromWire(const LoopProps& o) {
  LoopInfo d;
  for (const auto& row : loopProperties()) {
    auto it = o.find(row.name);
    if (it != o.end() && !row.set(d, it->second))
      return makeError(
          std::string("daemon sent loop property '") + row.name + "' with an unexpected type",
          EPROTO);
  }
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
      if (st = want("s"); st) {
        const std::string name = v.get<std::string>();
        if (auto m = directIoModeFromName(name))
          opt.directIo = *m;
        else
          st = invalid("direct_io " + quoteForMessage(name) + " is not one of: auto, on, off");
      }
    } else if (key == "backend") {
      if (st = want("s"); st) {
        const std::string name = v.get<std::string>();
        if (auto k = backendKindFromName(name))
          opt.backend = *k;
        else
          st = invalid("backend " + quoteForMessage(name) + " is not one of: auto, kernel, nbd");
      }
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
  if (opt.workers > kMaxLoopWorkers) {
    return invalid("workers " + std::to_string(opt.workers) + " is not between 1 and " +
                   std::to_string(kMaxLoopWorkers) + " (0 = not asked)");
  }
  // The daemon checks the upper bound against the loop module's hw_queue_depth.
  if (opt.queueDepth != 0 && (opt.queueDepth < kMinQueueDepth || opt.queueDepth > kMaxQueueDepth)) {
    return invalid("queue_depth " + std::to_string(opt.queueDepth) + " is not between " +
                   std::to_string(kMinQueueDepth) +
                   " and the loop module's hw_queue_depth (0 = the default)");
  }
  if (opt.nbdTimeoutSec > kMaxNbdTimeoutSec) {
    return invalid("nbd_timeout " + std::to_string(opt.nbdTimeoutSec) +
                   " is more than a day (0 = the default)");
  }
  if (opt.backend == BackendKind::Kernel && opt.nbdTimeoutSec) {
    return invalid("nbd_timeout applies to the nbd backend only");
  }
  // A kernel loop device has no server: the loop worker already charges the issuing cgroup.
  if (opt.backend == BackendKind::Kernel && !opt.serverCgroup.empty()) {
    return invalid(
        "server_cgroup applies to the nbd backend only (a kernel loop device charges "
        "its backing I/O to the cgroup that issued it)");
  }
  // An explicit backend's combinations are bad values too, refused before authorization
  // (docs/dbus-api.md): the backends checked them only after it, so an unprivileged caller
  // was asked for a password (or, without polkit, refused) for a call that could never work.
  if (opt.backend == BackendKind::Kernel && opt.workers > 1) {
    return invalid("workers " + std::to_string(opt.workers) +
                   " with the kernel backend (one worker per issuing cgroup): use backend nbd");
  }
  if (opt.backend == BackendKind::Nbd &&
      (opt.offset || opt.sizeLimit || opt.autoclear || opt.partscan)) {
    return invalid(
        "the nbd backend serves the whole file: no offset, size_limit, autoclear, "
        "partscan");
  }
  if (opt.backend == BackendKind::Nbd && opt.queueDepth) {
    return invalid(
        "queue_depth is a kernel loop setting; the nbd backend's concurrency is "
        "workers");
  }
  if (!validBlockSize(opt.blockSize)) {
    return invalid("block_size " + std::to_string(opt.blockSize) +
                   " is not a power of two between " + std::to_string(kMinBlockSize) + " and " +
                   std::to_string(kMaxBlockSize) + " (0 = let cxiosync choose)");
  }
  if (opt.offset > static_cast<uint64_t>(INT64_MAX) ||
      opt.sizeLimit > static_cast<uint64_t>(INT64_MAX)) {
    return invalid("offset and size_limit must be below 2^63");
  }
  return r;
}

bool loopSetupNeedsCallerPid(const LoopSetupOptions& o, uint32_t uid) {
  if (o.backend == BackendKind::Kernel) return false;
  return o.serverCgroup == "caller" || (o.serverCgroup.empty() && uid != 0);
}

std::map<std::string, sdbus::Variant> loopSetupOptionsToWire(const LoopSetupRequest& r) {
  std::map<std::string, sdbus::Variant> o;
  const auto& opt = r.options;
  if (opt.readOnly) o["read_only"] = sdbus::Variant(true);
  if (opt.offset) o["offset"] = sdbus::Variant(opt.offset);
  if (opt.sizeLimit) o["size_limit"] = sdbus::Variant(opt.sizeLimit);
  if (opt.blockSize) o["block_size"] = sdbus::Variant(opt.blockSize);
  if (opt.directIo != DirectIoMode::Auto)
    o["direct_io"] = sdbus::Variant(std::string(directIoModeName(opt.directIo)));
  if (opt.autoclear) o["autoclear"] = sdbus::Variant(true);
  if (opt.partscan) o["partscan"] = sdbus::Variant(true);
  if (opt.backend != BackendKind::Auto)
    o["backend"] = sdbus::Variant(std::string(backendKindName(opt.backend)));
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
