// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The daemon core: wires sensing -> planner -> executor on one event loop, and talks to
// systemd. Lifecycle:
//
//   create()   config, run dir, sensors (cgroupfs, detector), journal, executor
//   run()      recover journaled boosts -> event sources -> READY=1 -> loop
//              each tick: snapshot -> Planner::step -> restores, updates, starts, refusals
//              SIGHUP / config change: RELOADING=1, reload (a bad config keeps the old one),
//              READY=1.  SIGTERM/SIGINT: STOPPING=1, then restore every boost — or, with
//              lift_on_shutdown while the system is going down, lift every boostable limit.
//
// Extension point for the D-Bus layer: loop() gives the EventLoop (add the sd-bus fd with a
// prepare hook, see event_loop.h); executor()/planner state are read on the loop thread only.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "daemon/act/boost_executor.h"
#include "daemon/act/budget_store.h"
#include "daemon/act/journal.h"
#include "daemon/core/daemon_observer.h"
#include "daemon/core/daemon_settings.h"
#include "daemon/core/event_loop.h"
#include "daemon/core/metrics.h"
#include "daemon/core/notify.h"
#include "daemon/sense/snapshot_builder.h"
#include "daemon/sources/dropin_watch.h"
#include "daemon/sources/unit_dropins.h"
#include "policy/config/resolver.h"
#include "policy/config/yaml_config.h"
#include "policy/planner/planner.h"

namespace cxiosync {

class SystemdDropInFinder;  // daemon/sources/systemd_dropins.h (keeps <systemd/sd-bus.h> out of
                            // here)

class Daemon {
 public:
  // Loads nothing from disk except through `config` (already loaded by main).
  static Result<std::unique_ptr<Daemon>> create(const DaemonSettings& options, Config config);
  ~Daemon();

  // Recovery, READY=1, loop. Returns the process exit code.
  int run();

  EventLoop& loop() { return *loop_; }
  BoostExecutor& executor() { return *executor_; }
  const GlobalSettings& settings() const { return settings_; }
  std::string statusLine() const;

  // One planning step now (also used by tests).
  // eventDriven: run from the trace pipe's handler (a sync entered or left).
  void tick(bool eventDriven = false);

  // For the D-Bus adapter (daemon/app/bus_backend.h); loop thread only.
  void setObserver(DaemonObserver* observer) { observer_ = observer; }
  // The runtime policy layer (highest precedence); re-plans at once.
  void setRuntimePolicy(std::map<CgroupPath, PolicySettings> layer);
  // Re-reads the configuration (as SIGHUP); a bad one is logged and the old one kept.
  void reload(const char* why);
  Sensors& sensors() { return *sensors_; }
  const PolicyResolver& resolver() const { return *resolver_; }
  const Config& config() const { return config_; }
  const DaemonSettings& options() const { return options_; }
  MetricsSnapshot metricsSnapshot(TimePoint now) const;
  // Loads the unit drop-ins of `cgroup` and its ancestors if not yet known (for `show` of a
  // cgroup no snapshot has held); rebuilds the resolver when that changes the policy.
  void trackPolicyOf(const CgroupPath& cgroup);

 private:
  Daemon(const DaemonSettings& options, Config config);
  Status setupSources();
  void execute(const PlanResult& plan, TimePoint now);
  // Debug: where the time between a syncer's enter and its boost went (tests/bench/
  // boost_latency.py reads it).
  void logBoostLatency(const StartBoost& st) const;
  void logRefusal(const Refuse& r);
  // Counts and logs syncers entering and leaving the set ("syncer seen"/"syncer left").
  void traceSyncers(const Snapshot& s, TimePoint now);
  void onSignal(const signalfd_siginfo& si);
  void stop();
  void updateStatus();
  void writeMetrics(TimePoint now, bool force);
  void armDeadline(std::optional<TimePoint> at, TimePoint now);
  // tickTimer_ at pollInterval, or while idle at kIdleTick (pollInterval if that is longer).
  void setIdleTick(bool idle);
  // The trace pipe: drainPipe() reads it and plans at once when the syncer set changed;
  // the drain timer (onDrainTimer) stops while idle and quiet, armDrainTimer() restarts it.
  void drainPipe();
  void notePipeActivity();
  void onDrainTimer();
  void armDrainTimer();
  void watchConfigDirs();
  void onInotify();
  GlobalSettings effectiveSettings(const Config& c) const;
  void rebuildPolicy();
  // Unit drop-ins (daemon/sources/unit_dropins.h): finder by --unit-dropins, inotify, systemd's
  // Reloading signal, periodic upkeep.
  void openDropIns();
  void watchDropIns();
  void watchSystemd();
  void refreshDropIns(const char* why);

  DaemonSettings options_;
  Config config_;
  GlobalSettings settings_;
  std::unique_ptr<PolicyResolver> resolver_;
  std::unique_ptr<PolicyCache> policyCache_;
  std::unique_ptr<Sensors> sensors_;
  std::unique_ptr<IoMaxAccess> ioMax_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<BoostExecutor> executor_;
  std::unique_ptr<BudgetStore> budgets_;  // the planner's budget history, across restarts
  std::unique_ptr<EventLoop> loop_;
  Planner planner_;
  Notifier notifier_;
  MetricsFile metrics_;

  EventLoop::SourceId tickTimer_ = 0;
  bool idleTick_ = false;        // tickTimer_ runs at kIdleTick, not pollInterval
  bool metricsPending_ = false;  // a tick's metrics were not due yet: an idle tick writes them
  TimePoint lastFullTick_{};
  uint64_t ticks_ = 0;
  EventLoop::SourceId deadlineTimer_ = 0;
  EventLoop::SourceId reloadTimer_ = 0;
  int inotifyFd_ = -1;

  std::unique_ptr<DropInLayer> dropIns_;    // null with --unit-dropins=off
  SystemdDropInFinder* systemd_ = nullptr;  // dropIns_'s finder when it is systemd
  std::unique_ptr<DropInWatch> dropInWatch_;
  EventLoop::SourceId systemdSource_ = 0;
  EventLoop::SourceId systemdReconnectTimer_ = 0;
  EventLoop::SourceId dropInRefreshTimer_ = 0;

  // Metrics and log state.
  std::map<std::string, uint64_t> refusals_;
  std::map<std::string, uint64_t> syncsSeen_;
  std::set<std::pair<int64_t, int64_t>> knownSyncers_;  // (tid, since usec)
  std::optional<TimePoint> oldestSyncer_;  // entry time of the longest-waiting known syncer
  EventLoop::SourceId drainTimer_ = 0;     // reads the trace pipe every poll period
  bool drainArmed_ = false;
  uint64_t pipeLines_ = 0;                               // detector().linesSeen() at the last look
  TimePoint lastPipeActivity_{};                         // last wakeup or line from the pipe
  TimePoint lastDrain_{};                                // the drain timer's last run (stall check)
  TimePoint tickStart_{}, tickSnapshot_{}, tickPlan_{};  // this tick's phases
  std::vector<MetricsSnapshot::CgroupBytes> limitedBytes_;
  size_t cgroupsWatched_ = 0;
  std::string lastStatus_;
  std::string lastSnapshotError_;
  // Failed starts are not retried on every tick: (cgroup, device) -> retry after.
  std::map<std::pair<CgroupPath, DevNum>, TimePoint> startBackoff_;
  bool stopping_ = false;
  bool running_ = false;  // run() has recovered the journal: planning may start
  std::map<CgroupPath, PolicySettings> runtimePolicy_;
  DaemonObserver* observer_ = nullptr;

  void loadBudgets(TimePoint now);
  void saveBudgets(TimePoint now, bool final);
  std::string lastBudgetError_;
};

}  // namespace cxiosync
