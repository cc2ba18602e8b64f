// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The adapter between the daemon core and the bus boundary: implements dbus::ManagerBackend on
// top of Daemon (reads, and the runtime policy layer through RuntimePolicyStore), and turns the
// core's DaemonObserver callbacks into dbus::ManagerEvents (signals).
//
// Layering: the core (daemon/core/daemon.*) knows only DaemonObserver; dbus/ knows only
// ManagerBackend/ManagerEvents. This file is the one place that sees both, and it is built
// as its own library (cxiosync_daemon_bus, daemon/CMakeLists.txt) so that cxiosync_daemon
// itself never depends on dbus/ or sd-bus.
//
// main() uses attachBus(): it always loads the runtime policy (it applies with or without a
// bus) and, unless --bus=none, exports org.cxiosync1 on the daemon's event loop. A bus that
// cannot be reached is a warning, not an error: sync isolation must not depend on D-Bus.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/app/options.h"
#include "daemon/core/daemon.h"
#include "daemon/core/daemon_observer.h"
#include "daemon/core/work_queue.h"
#include "daemon/sources/runtime_policy_store.h"
#include "dbus/manager_backend.h"

namespace cxiosync {

namespace dbus {
class BusServer;
class LoopBackend;
}  // namespace dbus

class BusBackend final : public dbus::ManagerBackend, public DaemonObserver {
 public:
  BusBackend(Daemon& daemon, RuntimePolicyStore& store);
  void setEvents(dbus::ManagerEvents* events) { events_ = events; }

  // ManagerBackend.
  dbus::StatusInfo status() override;
  Result<std::vector<dbus::CgroupInfo>> listCgroups() override;
  Result<dbus::CgroupInfo> showCgroup(const CgroupPath& cgroup) override;
  std::vector<dbus::BoostInfo> listBoosts() override;
  std::vector<dbus::SyncerInfo> listSyncers() override;
  std::string metrics() override;
  Status setIsolation(const CgroupPath& cgroup, bool on, const dbus::ChangeOptions& opt) override;
  Status setTenant(const CgroupPath& cgroup, bool on, const dbus::ChangeOptions& opt) override;
  Status setBoostPolicy(const CgroupPath& cgroup, BoostPermission permission,
                        const dbus::ChangeOptions& opt) override;
  Status setBoostCeiling(const CgroupPath& cgroup, BoostCeiling ceiling,
                         const dbus::ChangeOptions& opt) override;
  Status resetPolicy(const CgroupPath& cgroup, const dbus::ChangeOptions& opt) override;
  Status reload() override;

  // DaemonObserver.
  void afterTick(const Snapshot& snapshot, const PlanResult& plan) override;
  void afterReload() override;

 private:
  struct BoostMeta {
    CgroupPath dirtier;
    std::string reason;
    TimePoint started{};
    ActiveBoost boost;
  };
  using BoostKey = std::pair<CgroupPath, DevNum>;

  // ENOENT (NoSuchCgroup) unless `cgroup` is a directory under the cgroup root, reached
  // without following a symlink (CgroupFs::openDir: openat2 RESOLVE_NO_SYMLINKS, or O_NOFOLLOW
  // per component).
  Status checkExists(const CgroupPath& cgroup);
  Status change(const CgroupPath& cgroup, const char* knob, std::string value,
                const dbus::ChangeOptions& opt);
  Result<dbus::CgroupInfo> info(const CgroupPath& cgroup);
  dbus::BoostInfo boostInfo(const ActiveBoost& a, TimePoint now) const;
  dbus::SyncerInfo syncerInfo(const Syncer& s, TimePoint now) const;

  Daemon& daemon_;
  RuntimePolicyStore& store_;
  dbus::ManagerEvents* events_ = nullptr;
  uint64_t startedRealtimeUsec_ = 0;
  bool ticked_ = false;
  bool busReload_ = false;
  std::vector<Syncer> syncers_;                                 // from the last tick
  std::set<std::pair<int64_t, int64_t>> knownSyncers_;          // (tid, since usec)
  std::map<std::pair<int64_t, int64_t>, std::string> refused_;  // (tid, since) -> reason
  std::set<CgroupPath> seenCgroups_;                            // from the last snapshot
  std::map<BoostKey, BoostMeta> boosts_;                        // active after the last tick
};

// The bus side of cxiosyncd, owned by main() for the daemon's lifetime (destroy it before the
// Daemon). Everything runs on the daemon's loop thread.
class DaemonBus {
 public:
  // Loads the runtime policy into `daemon` (always), then connects to options.bus unless
  // "none". Never fails: a bus problem is logged as a warning and the daemon runs without its
  // API (server() == nullptr).
  // loops: the loop devices API (Manager.LoopSetup/LoopList, org.cxiosync1.Loop); null: those
  // calls answer NotSupported.
  static std::unique_ptr<DaemonBus> attach(Daemon& daemon, const Options& options,
                                           dbus::LoopBackend* loops = nullptr);
  ~DaemonBus();
  dbus::BusServer* server() const { return server_.get(); }

 private:
  DaemonBus(Daemon& daemon, const Options& options);
  Daemon& daemon_;
  RuntimePolicyStore store_;
  BusBackend backend_;
  std::unique_ptr<dbus::BusServer> server_;
  // Loop and nbd operations run here, off the event loop (daemon/core/work_queue.h).
  std::unique_ptr<WorkQueue> loopJobs_;
  EventLoop::SourceId source_ = 0;
  EventLoop::SourceId eventSource_ = 0;  // sdbus-c++ 2.x's eventFd; 0 with 1.x
  void removeSources();
};

}  // namespace cxiosync
