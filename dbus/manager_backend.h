// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The contract between the bus boundary (dbus/) and the daemon core (daemon/).
//
// The daemon implements ManagerBackend; BusServer (dbus/bus_server.h) wraps it in the
// org.cxiosync1.Manager D-Bus interface. BusServer implements ManagerEvents; the daemon calls
// it to emit signals. Everything here runs on the daemon's one thread (the event loop).
//
// Before a mutation reaches the backend, BusServer has already:
//   - validated every argument (CgroupPath::parse: no "..", no NUL/control characters,
//     length limits; enums; numbers in range; unknown option keys rejected),
//   - authorized the caller (uid 0, or polkit action org.cxiosync1.manage).
// The backend still checks what only it can: that the cgroup exists under its cgroup root
// (without following symlinks: openat(O_DIRECTORY|O_NOFOLLOW) component by component).
//
// Errors: return cxiosync::Error (policy/result.h) with `code` set to an errno; BusServer
// maps it to a D-Bus error name (see errorKindOf below). Use the helpers at the bottom.
// A backend method may also throw: BusServer catches everything and replies
// org.cxiosync1.Error.Failed, but returning an Error gives the caller a better message.
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/config/knobs.h"
#include "policy/formats/io_max.h"
#include "policy/model/cgroup_path.h"
#include "policy/model/dev_num.h"
#include "policy/result.h"

namespace cxiosync::dbus {

// ---- read side -------------------------------------------------------------------------

struct StatusInfo {
  std::string version;               // CXIOSYNC_VERSION
  std::string detector;              // the detector in use: "tracefs" | "procfs" | "none"
  bool dryRun = false;               // global dry_run
  std::string state = "running";     // "starting" | "running" | "degraded" | "stopping"
  std::string stateDetail;           // one line a person can read ("" when all is well)
  uint64_t startedRealtimeUsec = 0;  // CLOCK_REALTIME µs since the epoch when the daemon started
  std::string cgroupRoot;            // "/sys/fs/cgroup" (or the injected --cgroup-root)
  uint32_t activeBoosts = 0;         // boosts in force now
  uint32_t activeSyncers = 0;        // syncers being tracked now
  uint64_t boostsTotal = 0;          // boosts started since the daemon started
  std::vector<std::string> configFiles;  // config files in effect, in load order
};

// The effective write limit on one device for a cgroup: the tightest of its own and its
// ancestors' io.max, and the cgroup that holds it (the one a boost would write to).
struct EffectiveLimit {
  DevNum device;
  uint64_t wbps = kUnlimited;   // bytes/s, kUnlimited = "max"
  uint64_t wiops = kUnlimited;  // IOs/s, kUnlimited = "max"
  CgroupPath wbpsHolder;        // where the binding wbps limit sits (meaningless if unlimited)
  CgroupPath wiopsHolder;       // where the binding wiops limit sits
};

struct CgroupInfo {
  CgroupPath path;
  std::vector<IoMaxEntry> ioMax;                // this cgroup's own io.max lines as read
  std::vector<EffectiveLimit> effectiveLimits;  // per device with a finite limit here or above
  uint64_t fileDirty = 0;                       // memory.stat file_dirty, bytes
  uint64_t fileWriteback = 0;                   // memory.stat file_writeback, bytes
  EffectivePolicy policy;                       // every knob with its source
  bool boosted = false;                         // a boost is in force on this cgroup now
};

struct BoostInfo {
  CgroupPath cgroup;   // where the limit sits (the io.max we wrote)
  CgroupPath dirtier;  // who owns the dirty pages (cgroup or a descendant)
  DevNum device;
  IoLimits original;  // the line before we wrote it (kUnlimited = max; nullopt = key absent)
  IoLimits boosted;   // what we wrote
  uint64_t startedRealtimeUsec = 0;  // CLOCK_REALTIME µs since the epoch
  uint64_t durationUsec = 0;         // so far (active) or in total (ended)
  std::vector<int64_t> syncerTids;   // the foreign syncers this boost serves
  std::string reason;                // one line a person can read
  bool shutdownLift = false;         // lift_on_shutdown
};

struct SyncerInfo {
  int64_t tid = 0;
  int64_t pid = 0;
  std::string comm;
  CgroupPath cgroup;
  std::string syscall;                 // "sync" | "syncfs" | "fsync" | ... (syncSyscallName)
  std::optional<DevNum> targetDevice;  // syncfs/fsync family: the filesystem's device
  uint64_t durationUsec = 0;           // time inside the syscall so far
  std::string state;  // "boosting" | "waiting" | a refuse reason ("self-sync", "boost-denied", ...)
};

// ---- write side ------------------------------------------------------------------------

struct ChangeOptions {
  bool runtime =
      false;  // true: keep in /run only (lost at reboot); false: persist in the state file
  uint32_t callerUid = 0;  // for the log line
};

class ManagerBackend {
 public:
  virtual ~ManagerBackend() = default;

  // Reads. Cheap enough to call from a D-Bus handler (no disk I/O on the stalled disk:
  // cgroupfs/procfs reads only, or cached values).
  virtual StatusInfo status() = 0;
  virtual Result<std::vector<CgroupInfo>> listCgroups() = 0;  // every cgroup the daemon tracks
  virtual Result<CgroupInfo> showCgroup(const CgroupPath& cgroup) = 0;  // ENOENT if absent
  virtual std::vector<BoostInfo> listBoosts() = 0;
  virtual std::vector<SyncerInfo> listSyncers() = 0;
  virtual std::string metrics() = 0;  // Prometheus text exposition format

  // Mutations (runtime policy layer, docs/architecture.md §3). Each returns ENOENT when the cgroup
  // does not exist, EINVAL for a value the backend rejects, EOPNOTSUPP when not supported here.
  virtual Status setIsolation(const CgroupPath& cgroup, bool on, const ChangeOptions& opt) = 0;
  virtual Status setBoostPolicy(const CgroupPath& cgroup, BoostPermission permission,
                                const ChangeOptions& opt) = 0;
  virtual Status setBoostCeiling(const CgroupPath& cgroup, BoostCeiling ceiling,
                                 const ChangeOptions& opt) = 0;
  // `tenant` of exactly this cgroup (a tenant boundary: docs/policy-semantics.md, "Tenants").
  virtual Status setTenant(const CgroupPath& cgroup, bool on, const ChangeOptions& opt) = 0;
  // Drops every runtime setting (persistent and --runtime) of this cgroup; lower layers
  // (drop-ins, YAML, defaults) apply again. Not an error if there was nothing to drop.
  virtual Status resetPolicy(const CgroupPath& cgroup, const ChangeOptions& opt) = 0;
  // Re-reads configuration (as SIGHUP). On a bad config keeps the old one and returns EINVAL
  // with the first error as "file:line: message".
  virtual Status reload() = 0;
};

// ---- signals ---------------------------------------------------------------------------

// Implemented by BusServer. The daemon calls these from its loop thread when things happen.
// Policy changes made through BusServer are announced by BusServer itself (PolicyChanged after
// a successful mutation); the daemon calls policyChanged() only for changes it originates
// (SIGHUP reload, a drop-in file edited), with cgroup "" meaning "possibly all cgroups".
class ManagerEvents {
 public:
  virtual ~ManagerEvents() = default;
  virtual void syncDetected(const SyncerInfo& syncer) = 0;
  virtual void boostStarted(const BoostInfo& boost) = 0;
  // reason: endReasonName() ("syncers-left", "max-boost-time", ...); boost.durationUsec total.
  virtual void boostEnded(const BoostInfo& boost, const std::string& reason) = 0;
  // knob: "sync_isolation" | "boost" | "boost_ceiling" | "tenant" | "" (all); value "" when
  // reset/unknown;
  // source: ValueSource kind ("runtime", "config", "drop-in", "default").
  virtual void policyChanged(const std::string& cgroup, const std::string& knob,
                             const std::string& value, const std::string& source) = 0;
  // The number of active boosts (property ActiveBoosts) or Detector/DryRun may have changed:
  // re-reads status() and emits PropertiesChanged for what differs.
  virtual void propertiesMayHaveChanged() = 0;
};

// ---- errors ----------------------------------------------------------------------------

enum class ErrorKind { InvalidArgument, NoSuchCgroup, AccessDenied, NotSupported, Failed };

// errno → kind: EINVAL/ERANGE → InvalidArgument, ENOENT/ENOTDIR → NoSuchCgroup,
// EACCES/EPERM → AccessDenied, EOPNOTSUPP/ENOSYS → NotSupported, anything else → Failed.
ErrorKind errorKindOf(const Error& error);
const char* errorKindName(ErrorKind kind);  // "org.cxiosync1.Error.InvalidArgument", ...

inline Error invalidArgument(std::string message) {
  return makeError(std::move(message), EINVAL);
}
inline Error noSuchCgroup(std::string message) {
  return makeError(std::move(message), ENOENT);
}
inline Error notSupported(std::string message) {
  return makeError(std::move(message), EOPNOTSUPP);
}
inline Error failed(std::string message, int err = EIO) {
  return makeError(std::move(message), err);
}

}  // namespace cxiosync::dbus
