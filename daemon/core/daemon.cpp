// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/core/daemon.h"
#include "daemon/core/exit_codes.h"

#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/kernel/inotify_events.h"
#include "daemon/log/logging.h"
#include "daemon/sense/detector.h"
#include "daemon/sources/config_loader.h"
#include "daemon/sources/systemd_dropins.h"
#include "policy/config/defaults.h"

namespace cxiosync {
namespace {

// Metrics are rewritten at most this often (node_exporter scrapes every 15 s or so).
constexpr std::chrono::milliseconds kMetricsInterval{5000};
// A start that failed (io.max not writable, journal full, ...) is retried after this long,
// not on every tick.
constexpr std::chrono::seconds kStartRetry{5};
// Config files are re-read this long after the last inotify event (editors write in bursts).
constexpr std::chrono::milliseconds kReloadDebounce{500};
// Unit drop-ins: forgotten cgroups and failed lookups are seen to this often.
constexpr std::chrono::seconds kDropInUpkeep{60};
// PID 1 re-executing (daemon-reexec) closes our connection; ask again this often.
constexpr std::chrono::seconds kSystemdReconnect{2};
// Ticks slower than this are logged at debug level with where the time went.
constexpr std::chrono::milliseconds kSlowTick{50};
// Tick period while the tracefs detector sees no sync and nothing is boosted (see tick()):
// the metrics period, since an idle tick only refreshes them (and a sync's event tick reads
// everything a plan needs, new cgroups included). Issue 15: 1,000 cgroups, 50 limited, read
// every second cost more than the whole 0.05 %-of-a-core idle budget in the VM.
constexpr std::chrono::milliseconds kIdleTick = kMetricsInterval;
// While idle, the full refresh (limited cgroups' io.max and memory.stat, the metrics' dirty
// gauges) runs this often; the ticks between only check that nothing changed.
constexpr std::chrono::seconds kIdleRefresh{60};

std::string syncerText(const Syncer& s) {
  return fmt::format("syncer_pid={} syncer_tid={} syncer_comm={} syncer_cgroup={} syscall={}",
                     s.pid, s.tid, logQuote(s.comm), logQuote(s.cgroup.display()),
                     syncSyscallName(s.syscall));
}

int64_t usecOf(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

}  // namespace

Daemon::Daemon(const DaemonSettings& options, Config config)
    : options_(options), config_(std::move(config)), metrics_(options.runDir, kMetricsInterval) {
  settings_ = effectiveSettings(config_);
  rebuildPolicy();
}

Daemon::~Daemon() {
  if (inotifyFd_ >= 0) ::close(inotifyFd_);
}

GlobalSettings Daemon::effectiveSettings(const Config& c) const {
  GlobalSettings s = c.global;
  if (options_.detector) s.detector = *options_.detector;
  if (options_.dryRun) s.dryRun = true;
  return s;
}

void Daemon::rebuildPolicy() {
  PolicyLayers layers;
  layers.defaults = builtinPolicyDefaults();
  layers.yaml = config_.cgroups;
  if (dropIns_) layers.dropIn = dropIns_->layer();
  layers.runtime = runtimePolicy_;
  policyCache_.reset();
  resolver_ = std::make_unique<PolicyResolver>(layers);
  policyCache_ = std::make_unique<PolicyCache>(*resolver_);
}

Result<std::unique_ptr<Daemon>> Daemon::create(const DaemonSettings& options, Config config) {
  std::unique_ptr<Daemon> d(new Daemon(options, std::move(config)));
  if (::mkdir(options.runDir.c_str(), 0755) != 0 && errno != EEXIST)
    return makeError("cannot create the run directory " + options.runDir + ": " + strerror(errno),
                     errno);
  SenseRoots roots;
  roots.cgroup = options.cgroupRoot;
  roots.proc = options.procRoot;
  roots.sys = options.sysRoot;
  roots.tracefs = options.tracefsRoot;
  auto sensors = Sensors::open(roots, d->settings_);
  if (!sensors)
    return makeError("cannot start sensing: " + sensors.error().message, sensors.error().code);
  d->sensors_ = std::move(sensors.value());
  d->ioMax_ = makeCgroupFsIoMax(d->sensors_->cgroupFs());
  d->openDropIns();
  d->journal_ = std::make_unique<Journal>(options.runDir);
  d->executor_ = std::make_unique<BoostExecutor>(*d->ioMax_, *d->journal_, d->settings_.dryRun);
  d->budgets_ = std::make_unique<BudgetStore>(options.runDir);
  auto loop = EventLoop::create();
  if (!loop) return loop.error();
  d->loop_ = std::move(loop.value());
  return d;
}

std::string Daemon::statusLine() const {
  size_t n = executor_ ? executor_->activeCount() : 0;
  return fmt::format("{} detector{}, {} cgroups watched, {} boost{} active",
                     sensors_ ? detectorKindName(sensors_->detectorKind()) : "no",
                     settings_.dryRun ? " (dry run)" : "", cgroupsWatched_, n, n == 1 ? "" : "s");
}

void Daemon::updateStatus() {
  std::string s = statusLine();
  if (s == lastStatus_) return;
  lastStatus_ = s;
  notifier_.status(s);
}

Status Daemon::setupSources() {
  auto sig = loop_->addSignals({SIGTERM, SIGINT, SIGHUP},
                               [this](const signalfd_siginfo& si) { onSignal(si); });
  if (!sig) return sig.error();
  auto tick = loop_->addTimer(settings_.pollInterval, settings_.pollInterval, [this] {
    // Idle with tracefs, a tick reads every limited cgroup's io.max and memory.stat only for
    // the metrics: 50 limited cgroups cost 55-100 ms a tick in the VM (issue 15, idle
    // cost). So idle ticks only look (quiet(): one cgroup.stat read, one pipe read) and the
    // full refresh runs every kIdleRefresh; anything new (a syncer, a cgroup made or
    // removed) makes it a full tick at once. Planner deadlines use their own timer.
    if (idleTick_ && Clock::now() - lastFullTick_ < kIdleRefresh && sensors_->quiet()) {
      notePipeActivity();
      // Counters the last full tick moved (a boost's end) are written now, not a minute on.
      if (metricsPending_) writeMetrics(Clock::now(), false);
      return;
    }
    this->tick();
  });
  if (!tick) return tick.error();
  tickTimer_ = tick.value();
  auto deadline = loop_->addTimer(std::chrono::hours(24 * 365), std::chrono::nanoseconds(0),
                                  [this] { this->tick(); });
  if (!deadline) return deadline.error();
  deadlineTimer_ = deadline.value();
  (void)loop_->setTimer(deadlineTimer_, std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
  if (sensors_->fd() >= 0) {
    auto io = loop_->addIo(sensors_->fd(), EPOLLIN, [this](uint32_t) {
      lastPipeActivity_ = Clock::now();
      armDrainTimer();
      drainPipe();
    });
    if (!io) return io.error();
    auto t =
        loop_->addTimer(settings_.pollInterval, settings_.pollInterval, [this] { onDrainTimer(); });
    if (!t) return t.error();
    drainTimer_ = t.value();
    drainArmed_ = true;
    lastPipeActivity_ = Clock::now();
  }
  if (auto wd = notifier_.watchdogPingInterval()) {
    notifier_.watchdog();
    auto t = loop_->addTimer(*wd, *wd, [this] { notifier_.watchdog(); });
    if (!t) return t.error();
    spdlog::info("systemd watchdog: pinging every {} ms", wd->count() / 1000);
  }
  watchConfigDirs();
  watchDropIns();
  return Ok{};
}

void Daemon::openDropIns() {
  UnitDropInMode mode = options_.unitDropIns;
  if (mode == UnitDropInMode::Auto && !options_.unitRoot.empty()) mode = UnitDropInMode::Files;
  if (mode == UnitDropInMode::Off) {
    spdlog::info("unit drop-ins: off (--unit-dropins=off)");
    return;
  }
  std::unique_ptr<UnitDropInFinder> finder;
  if (mode == UnitDropInMode::Auto || mode == UnitDropInMode::Systemd) {
    auto units = SystemdDropInFinder::connect();
    if (units) {
      spdlog::info("unit drop-ins: asking systemd over its {} (DropInPaths, Reloading)",
                   units.value()->via());
      systemd_ = units.value().get();
      finder = std::move(units.value());
    } else if (mode == UnitDropInMode::Systemd) {
      spdlog::error("unit drop-ins: cannot ask systemd ({}); [X-CxIOSync] sections are ignored",
                    units.error().message);
      return;
    } else {
      spdlog::info("unit drop-ins: systemd not available ({}); reading the unit search path",
                   units.error().message);
    }
  }
  if (!finder) {
    finder = std::make_unique<SearchPathDropInFinder>(options_.unitRoot, systemUnitSearchPath());
    if (!options_.unitRoot.empty())
      spdlog::info("unit drop-ins: reading the unit search path below {}", options_.unitRoot);
  }
  dropIns_ = std::make_unique<DropInLayer>(std::move(finder));
}

void Daemon::watchDropIns() {
  if (!dropIns_) return;
  auto refresh = loop_->addTimer(std::chrono::hours(1), std::chrono::nanoseconds(0),
                                 [this] { refreshDropIns("drop-in files changed"); });
  if (refresh) {
    dropInRefreshTimer_ = refresh.value();
    (void)loop_->setTimer(dropInRefreshTimer_, std::chrono::nanoseconds(0),
                          std::chrono::nanoseconds(0));
  }
  (void)loop_->addTimer(kDropInUpkeep, kDropInUpkeep, [this] {
    if (dropIns_->maintain(Clock::now())) {
      rebuildPolicy();
      tick();
    }
  });
  // Editing a drop-in applies without a daemon-reload (systemd itself would need one for a
  // new or removed file: with systemd as the finder, those count after its Reloading signal).
  auto watch =
      DropInWatch::open(systemd_ ? std::string() : options_.unitRoot, systemUnitSearchPath());
  if (!watch) {
    spdlog::warn("cannot watch the drop-in directories ({}); changes apply on SIGHUP",
                 watch.error().message);
  } else {
    dropInWatch_ = std::move(watch.value());
    auto io = loop_->addIo(dropInWatch_->fd(), EPOLLIN, [this](uint32_t) {
      if (dropInWatch_->onReadable() && dropInRefreshTimer_)
        (void)loop_->setTimer(dropInRefreshTimer_, kReloadDebounce, std::chrono::nanoseconds(0));
    });
    if (!io) spdlog::warn("cannot watch the drop-in directories: {}", io.error().message);
  }
  if (systemd_) watchSystemd();
}

void Daemon::watchSystemd() {
  auto io = loop_->addIo(
      systemd_->fd(), systemd_->pollEvents(),
      [this](uint32_t) {
        auto p = systemd_->process();
        if (p.reloads) refreshDropIns("systemd reloaded its units");
        if (!p.disconnected) return;
        spdlog::warn("systemd closed the connection (daemon-reexec?); reconnecting");
        loop_->removeSource(systemdSource_);
        systemdSource_ = 0;
        (void)loop_->setTimer(systemdReconnectTimer_, kSystemdReconnect, kSystemdReconnect);
      },
      [this]() -> EventLoop::Prepared {
        auto timeout = systemd_->pending() ? std::chrono::microseconds(0) : systemd_->timeout();
        return {EventLoop::pollToEpoll(systemd_->pollEvents()), timeout};
      });
  if (!io) {
    spdlog::warn("cannot listen to systemd's signals: {}", io.error().message);
    return;
  }
  systemdSource_ = io.value();
  if (systemdReconnectTimer_) return;
  auto t = loop_->addTimer(std::chrono::hours(1), std::chrono::nanoseconds(0), [this] {
    if (auto st = systemd_->reconnect(); !st) {
      spdlog::debug("systemd does not answer yet: {}", st.error().message);
      return;
    }
    (void)loop_->setTimer(systemdReconnectTimer_, std::chrono::nanoseconds(0),
                          std::chrono::nanoseconds(0));
    spdlog::info("reconnected to systemd over its {}", systemd_->via());
    watchSystemd();
    refreshDropIns("reconnected to systemd");
  });
  if (t) {
    systemdReconnectTimer_ = t.value();
    (void)loop_->setTimer(systemdReconnectTimer_, std::chrono::nanoseconds(0),
                          std::chrono::nanoseconds(0));
  }
}

void Daemon::refreshDropIns(const char* why) {
  if (!dropIns_ || stopping_) return;
  spdlog::info("re-reading unit drop-ins ({})", why);
  if (dropInWatch_) dropInWatch_->rewatch();
  if (!dropIns_->refreshAll(Clock::now())) return;
  rebuildPolicy();
  if (observer_) observer_->afterReload();
  if (running_) tick();
}

void Daemon::trackPolicyOf(const CgroupPath& cgroup) {
  if (dropIns_ && dropIns_->track(cgroup, Clock::now())) rebuildPolicy();
}

void Daemon::watchConfigDirs() {
  // --config names a directory (cxiosync.yaml + cxiosync.d/) or one file: watch the
  // directory that holds what we read.
  struct stat st {};
  std::string dir = options_.configPath;
  if (::stat(dir.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    auto slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, std::max<size_t>(slash, 1));
  }
  inotifyFd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotifyFd_ < 0) {
    spdlog::warn("inotify unavailable ({}); config changes need SIGHUP", strerror(errno));
    return;
  }
  const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE;
  int watches = 0;
  for (const std::string& d : {dir, dir + "/" + std::string(kConfigDropInDir)})
    if (::inotify_add_watch(inotifyFd_, d.c_str(), mask) >= 0) ++watches;
  if (watches == 0) {
    ::close(inotifyFd_);
    inotifyFd_ = -1;
    return;
  }
  auto io = loop_->addIo(inotifyFd_, EPOLLIN, [this](uint32_t) { onInotify(); });
  if (!io) return;
  auto t = loop_->addTimer(std::chrono::hours(1), std::chrono::nanoseconds(0),
                           [this] { reload("configuration files changed"); });
  if (t) {
    reloadTimer_ = t.value();
    (void)loop_->setTimer(reloadTimer_, std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
  }
}

void Daemon::onInotify() {
  bool relevant = false;
  drainInotify(inotifyFd_, [&](const inotify_event& ev) {
    std::string_view name = ev.len ? ev.name : "";
    // Editor temporaries and dot files do not count; the drop-in dir itself does.
    if (name.empty() || name == kConfigDropInDir ||
        (name[0] != '.' && name.size() > 5 && name.substr(name.size() - 5) == ".yaml"))
      relevant = true;
  });
  if (relevant && reloadTimer_)
    (void)loop_->setTimer(reloadTimer_, kReloadDebounce, std::chrono::nanoseconds(0));
}

int Daemon::run() {
  const TimePoint now = Clock::now();
  auto summary = executor_->recover(now);
  if (!summary) return kExitFailure;
  if (summary->restored || summary->keptChanged || summary->gone || summary->failed)
    spdlog::info(
        "recovery: {} restored, {} kept (changed by others), {} dropped (cgroup gone), "
        "{} failed (kept for retry)",
        summary->restored, summary->keptChanged, summary->gone, summary->failed);
  loadBudgets(now);
  if (auto st = setupSources(); !st) {
    spdlog::critical("cannot set up the event loop: {}", st.error().message);
    executor_->restoreAll(EndReason::Shutdown, Clock::now());
    return kExitFailure;
  }
  spdlog::info("cxiosyncd ready: detector {} ({}), poll every {} ms, lift_on_shutdown={}{}",
               detectorKindName(sensors_->detectorKind()), sensors_->detectorReason(),
               settings_.pollInterval.count(), settings_.liftOnShutdown ? "yes" : "no",
               settings_.dryRun ? ", DRY RUN: io.max is never written" : "");
  running_ = true;
  tick();
  lastStatus_ = statusLine();
  notifier_.ready(lastStatus_);
  auto rc = loop_->run();
  if (!rc) {
    spdlog::critical("event loop failed: {}", rc.error().message);
    stop();
    return kExitFailure;
  }
  // Whoever ended the loop (a signal, the D-Bus connection lost: kExitBusLost), no boost
  // outlives the daemon unless stop() chose the shutdown lift.
  stop();
  return rc.value();
}

void Daemon::tick(bool eventDriven) {
  if (stopping_) return;
  const TimePoint now = Clock::now();
  ++ticks_;
  lastFullTick_ = now;
  std::set<CgroupPath> boosted;
  for (const auto& b : executor_->active()) boosted.insert(b.cgroup);
  auto snap = sensors_->tick(now, boosted, eventDriven);
  notePipeActivity();  // the tick read the pipe too
  const TimePoint tSnap = Clock::now();
  if (!snap) {
    if (snap.error().message != lastSnapshotError_) {
      spdlog::error("cannot take a snapshot: {}", snap.error().message);
      lastSnapshotError_ = snap.error().message;
    }
    return;
  }
  if (!lastSnapshotError_.empty()) {
    spdlog::info("snapshots work again");
    lastSnapshotError_.clear();
  }
  const Snapshot& s = snap.value();
  cgroupsWatched_ = s.cgroups.size();
  if (dropIns_) {
    // Drop-ins of cgroups not seen before, before any decision about them.
    bool changed = false;
    for (const auto& [path, cg] : s.cgroups) changed = dropIns_->track(path, now) || changed;
    for (const auto& sy : s.syncers) changed = dropIns_->track(sy.cgroup, now) || changed;
    if (changed) rebuildPolicy();
  }
  traceSyncers(s, now);

  PolicyLookup lookup = [this](const CgroupPath& cg) { return policyCache_->get(cg); };
  PlanResult plan = planner_.step(s, executor_->active(), lookup, settings_, false);
  const TimePoint tPlan = Clock::now();
  tickStart_ = now;
  tickSnapshot_ = tSnap;
  tickPlan_ = tPlan;
  execute(plan, now);
  const TimePoint tExec = Clock::now();
  saveBudgets(now, false);  // after the boosts: a tmpfs write, but never ahead of a boost
  armDeadline(plan.nextWakeup, now);
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  if (tExec - now > kSlowTick)
    spdlog::debug(
        "slow tick: snapshot {:.1f} ms, plan {:.1f} ms, execute {:.1f} ms "
        "({} decisions, {} syncers; detector {:.1f} ms of the snapshot)",
        ms(tSnap - now), ms(tPlan - tSnap), ms(tExec - tPlan), plan.decisions.size(),
        s.syncers.size(), ms(sensors_->lastDetectorTime()));

  // Dirty/writeback of cgroups under a finite write limit (own or inherited). A boosted limit
  // is still the cgroup's limit: its io.max reads "max" only while we lift it.
  limitedBytes_.clear();
  boosted.clear();
  for (const auto& b : executor_->active()) boosted.insert(b.cgroup);
  for (const auto& [path, cg] : s.cgroups) {
    bool limited = false;
    for (const auto& a : path.ancestorsAndSelf()) {
      limited = limited || boosted.count(a) > 0;
      auto it = s.cgroups.find(a);
      if (it == s.cgroups.end()) continue;
      for (const auto& e : it->second.ioMax) limited = limited || limitsWrites(e);
    }
    if (limited) limitedBytes_.push_back({path.display(), cg.fileDirty, cg.fileWriteback});
  }
  writeMetrics(now, false);
  updateStatus();
  // With tracefs a sync wakes the loop through the trace pipe (and its unknown cgroups are
  // walked then), and the planner arms its own deadlines: while nothing syncs and nothing is
  // boosted, the poll only refreshes metrics and notices new cgroups, so the metrics period
  // is enough (tests/bench/boost_latency.py: idle cost). procfs must poll to see a sync. A
  // /proc rescan an event tick deferred keeps the poll period until it has run.
  setIdleTick(sensors_->detectorKind() == DetectorKind::Tracefs && s.syncers.empty() &&
              executor_->activeCount() == 0 && !sensors_->detector().rescanPending());
  if (observer_) observer_->afterTick(s, plan);
}

void Daemon::traceSyncers(const Snapshot& s, TimePoint now) {
  // Syncs seen, counted once per sync call, and the end of each: the daemon's own trace of
  // its syncer set, which storm_soak.check.py compares with /proc samples. "left" first: a
  // thread that left one call and entered the next between two ticks reads in order.
  std::set<std::pair<int64_t, int64_t>> current;
  oldestSyncer_.reset();
  for (const auto& sy : s.syncers) {
    current.insert({sy.tid, usecOf(sy.since)});
    if (!oldestSyncer_ || sy.since < *oldestSyncer_) oldestSyncer_ = sy.since;
  }
  for (const auto& [tid, since] : knownSyncers_)
    if (!current.count({tid, since}))
      spdlog::debug("syncer left after {:.1f} ms  syncer_tid={}", (usecOf(now) - since) / 1000.0,
                    tid);
  // When the detector took it into its set, on the wall clock of the log's timestamps (the
  // tick that logs it may run later when the daemon is starved of CPU).
  const auto wallNow = std::chrono::system_clock::now();
  for (const auto& sy : s.syncers) {
    if (knownSyncers_.count({sy.tid, usecOf(sy.since)})) continue;
    ++syncsSeen_[syncSyscallName(sy.syscall)];
    const auto knownAt = wallNow - std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                       Clock::now() - sy.since);
    spdlog::debug(
        "syncer seen {:.1f} ms after it entered the call ({} waits-on)  {} known_since_unix_ms={}",
        std::chrono::duration<double, std::milli>(now - sy.since).count(), sy.waitsOn.size(),
        syncerText(sy),
        std::chrono::duration_cast<std::chrono::milliseconds>(knownAt.time_since_epoch()).count());
  }
  knownSyncers_ = std::move(current);
}

void Daemon::drainPipe() {
  sensors_->onReadable();
  notePipeActivity();
  // A sync entered or left: plan now rather than at the next poll tick.
  if (sensors_->detector().changed()) tick(true);
}

void Daemon::notePipeActivity() {
  const uint64_t lines = sensors_->detector().linesSeen();
  if (lines == pipeLines_) return;
  pipeLines_ = lines;
  lastPipeActivity_ = Clock::now();
  armDrainTimer();
}

// The trace pipe's wakeup can be missed (trace_detector.h: the ring buffer's poll has no
// writer-side barrier). That race needs a poll of the pipe, and epoll polls it only at
// EPOLL_CTL_ADD and right after a wakeup or a delivered event: so it can only hide an event
// that comes within moments of another one. The timer reads the pipe every poll period
// while anything happens and for two periods after the pipe last gave a line or a wakeup;
// then, idle, it stops: 10 wakeups a second were most of the idle cost (issue 15, VM: 0.66 %
// of a core). One read() that says EAGAIN, ~2 us. It also tells when the loop itself stalls
// (starved of CPU, blocked in a write): no detector keeps a syncer known while we do not run.
void Daemon::onDrainTimer() {
  const TimePoint at = Clock::now();
  if (lastDrain_ != TimePoint{} && at - lastDrain_ > 3 * settings_.pollInterval)
    spdlog::debug("event loop stalled: {:.0f} ms between two {} ms drain timers",
                  std::chrono::duration<double, std::milli>(at - lastDrain_).count(),
                  settings_.pollInterval.count());
  lastDrain_ = at;
  drainPipe();
  if (idleTick_ && at - lastPipeActivity_ > 2 * settings_.pollInterval) {
    (void)loop_->setTimer(drainTimer_, std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
    drainArmed_ = false;
    lastDrain_ = {};
    spdlog::debug("trace pipe drain timer off: idle, no event for {:.0f} ms",
                  std::chrono::duration<double, std::milli>(at - lastPipeActivity_).count());
  }
}

void Daemon::armDrainTimer() {
  if (drainArmed_ || drainTimer_ == 0) return;
  drainArmed_ = true;
  (void)loop_->setTimer(drainTimer_, settings_.pollInterval, settings_.pollInterval);
  spdlog::debug("trace pipe drain timer on: every {} ms", settings_.pollInterval.count());
}

void Daemon::setIdleTick(bool idle) {
  if (idle == idleTick_) return;
  idleTick_ = idle;
  if (!idle) armDrainTimer();
  auto period = idle ? std::max<std::chrono::nanoseconds>(kIdleTick, settings_.pollInterval)
                     : std::chrono::nanoseconds(settings_.pollInterval);
  (void)loop_->setTimer(tickTimer_, period, period);
}

void Daemon::setRuntimePolicy(std::map<CgroupPath, PolicySettings> layer) {
  runtimePolicy_ = std::move(layer);
  rebuildPolicy();
  // Before run() has restored the journal no planning (and no boost) may happen: the D-Bus
  // adapter sets the persisted runtime layer before run().
  if (running_ && !stopping_) tick();
}

void Daemon::armDeadline(std::optional<TimePoint> at, TimePoint now) {
  if (!at) {
    (void)loop_->setTimer(deadlineTimer_, std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
    return;
  }
  auto delay = *at - now;
  if (delay < std::chrono::milliseconds(1)) delay = std::chrono::milliseconds(1);
  (void)loop_->setTimer(deadlineTimer_, std::chrono::duration_cast<std::chrono::nanoseconds>(delay),
                        std::chrono::nanoseconds(0));
}

void Daemon::execute(const PlanResult& plan, TimePoint now) {
  // The planner orders them: restores, updates, starts, refusals.
  for (const Decision& d : plan.decisions) {
    if (const auto* r = std::get_if<RestoreBoost>(&d)) {
      (void)executor_->restore(*r, now);
    } else if (const auto* u = std::get_if<UpdateBoost>(&d)) {
      executor_->update(*u);
    } else if (const auto* st = std::get_if<StartBoost>(&d)) {
      auto key = std::make_pair(st->cgroup, st->device);
      auto backoff = startBackoff_.find(key);
      if (backoff != startBackoff_.end()) {
        if (now < backoff->second) continue;
        startBackoff_.erase(backoff);
      }
      auto res = executor_->start(*st, now, st->shutdownLift);
      if (!res && res.error().code != EALREADY && res.error().code != EEXIST)
        startBackoff_[key] = now + kStartRetry;
      if (res && spdlog::should_log(spdlog::level::debug)) logBoostLatency(*st);
    } else if (const auto* f = std::get_if<Refuse>(&d)) {
      logRefusal(*f);
    }
  }
}

void Daemon::logBoostLatency(const StartBoost& st) const {
  const Syncer& sy = st.trigger;
  if (sy.tid == 0 || tickStart_ == TimePoint{}) return;
  const TimePoint written = Clock::now();
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  // event_to_read: the kernel's enter event (trace_clock mono) until the daemon read it;
  // read_to_tick: read until the tick that planned this boost started (a whole poll period
  // or more when the first ticks found no dirtier to boost).
  const std::string kernel = sy.entered ? fmt::format("{:.2f}", ms(sy.since - *sy.entered)) : "-";
  spdlog::debug(
      "boost latency {:.2f} ms  event_to_read={} read_to_tick={:.2f} snapshot={:.2f} "
      "plan={:.2f} write={:.2f} syncer_tid={} cgroup={}",
      ms(written - (sy.entered ? *sy.entered : sy.since)), kernel, ms(tickStart_ - sy.since),
      ms(tickSnapshot_ - tickStart_), ms(tickPlan_ - tickSnapshot_), ms(written - tickPlan_),
      sy.tid, logQuote(st.cgroup.display()));
}

void Daemon::logRefusal(const Refuse& r) {
  ++refusals_[refuseReasonName(r.why)];
  const std::string holder = r.cgroup.display();
  if (r.why == RefuseReason::DryRun) {
    spdlog::info(
        "dry-run: would boost {} on {} for {}[{}] in {} ({}); {}  action=dry-run-boost "
        "cgroup={} dirtier={} device={} {} reason={}",
        holder, r.device.str(), r.syncer.comm, r.syncer.tid, r.syncer.cgroup.display(),
        syncSyscallName(r.syncer.syscall), r.detail, logQuote(holder),
        logQuote(r.dirtier.display()), r.device.str(), syncerText(r.syncer), logQuote(r.detail));
    return;
  }
  spdlog::info(
      "not boosting {} on {} for {}[{}] in {} ({}): {}; {}  action=refuse cgroup={} "
      "dirtier={} device={} {} refusal={} reason={}",
      holder, r.device.str(), r.syncer.comm, r.syncer.tid, r.syncer.cgroup.display(),
      syncSyscallName(r.syncer.syscall), refuseReasonName(r.why), r.detail, logQuote(holder),
      logQuote(r.dirtier.display()), r.device.str(), syncerText(r.syncer), refuseReasonName(r.why),
      logQuote(r.detail));
}

void Daemon::writeMetrics(TimePoint now, bool force) {
  if (!force && !metrics_.due(now)) {
    metricsPending_ = true;
    return;
  }
  metricsPending_ = false;
  if (auto w = metrics_.write(formatMetrics(metricsSnapshot(now)), now); !w)
    spdlog::debug("cannot write metrics: {}", w.error().message);
}

MetricsSnapshot Daemon::metricsSnapshot(TimePoint now) const {
  MetricsSnapshot m;
  m.detector = detectorKindName(sensors_->detectorKind());
  const auto& st = executor_->stats();
  m.boostsBySyscall = st.boostsBySyscall;
  m.boostEndsByReason = st.endsByReason;
  m.refusalsByReason = refusals_;
  m.syncsBySyscall = syncsSeen_;
  m.boostSecondsTotal = st.boostSecondsTotal + executor_->activeBoostSeconds(now);
  m.activeBoosts = executor_->activeCount();
  m.keptChanged = st.keptChanged;
  m.errors = st.failures;
  m.cgroupsWatched = cgroupsWatched_;
  m.ticks = ticks_;
  m.limitedCgroups = limitedBytes_;
  if (oldestSyncer_ && now > *oldestSyncer_)
    m.oldestSyncWaitSeconds = std::chrono::duration<double>(now - *oldestSyncer_).count();
  return m;
}

void Daemon::onSignal(const signalfd_siginfo& si) {
  if (si.ssi_signo == SIGHUP) {
    reload("SIGHUP");
    return;
  }
  spdlog::info("received {}, stopping", strsignal(static_cast<int>(si.ssi_signo)));
  stop();
  loop_->exit(kExitOk);
}

void Daemon::reload(const char* why) {
  notifier_.reloading("reloading configuration");
  spdlog::info("reloading configuration ({})", why);
  auto cfg = checkConfigPath(options_.configPath);
  if (!cfg) {
    spdlog::error("configuration not reloaded, keeping the previous one: {}", cfg.error().message);
    notifier_.ready(statusLine() + "; last reload failed: " + cfg.error().message);
    lastStatus_.clear();
    return;
  }
  GlobalSettings next = effectiveSettings(cfg.value());
  if (next.detector != settings_.detector || next.watchFsync != settings_.watchFsync ||
      next.minDirtyBytes != settings_.minDirtyBytes)
    spdlog::warn(
        "detector, watch_fsync and min_dirty_bytes changes take effect at the next "
        "daemon restart");
  next.detector = settings_.detector;
  next.watchFsync = settings_.watchFsync;
  next.minDirtyBytes = settings_.minDirtyBytes;
  const bool newPeriod = next.pollInterval != settings_.pollInterval;
  if (next.dryRun != settings_.dryRun) executor_->setDryRun(next.dryRun);
  config_ = std::move(cfg.value());
  settings_ = next;
  if (newPeriod) {
    (void)loop_->setTimer(tickTimer_, settings_.pollInterval, settings_.pollInterval);
    idleTick_ = false;  // the next tick chooses again
    drainArmed_ = false;
    armDrainTimer();  // at the new period
  }
  if (dropIns_) {
    if (dropInWatch_) dropInWatch_->rewatch();
    dropIns_->refreshAll(Clock::now());
  }
  rebuildPolicy();
  spdlog::info("configuration reloaded from {} file(s)", config_.files.size());
  lastStatus_ = statusLine();
  notifier_.ready(lastStatus_);
  if (observer_) observer_->afterReload();
  tick();
}

void Daemon::stop() {
  if (stopping_) return;
  stopping_ = true;
  notifier_.stopping("stopping");
  const TimePoint now = Clock::now();
  const bool goingDown =
      settings_.liftOnShutdown && !settings_.dryRun && systemShuttingDown(options_.assumeShutdown);
  if (goingDown) {
    spdlog::info(
        "the system is shutting down: lifting every boostable write limit so the final "
        "sync is not throttled (lift_on_shutdown)");
    auto snap = sensors_->tick(now);
    if (snap) {
      PolicyLookup lookup = [this](const CgroupPath& cg) { return policyCache_->get(cg); };
      PlanResult plan = planner_.step(snap.value(), executor_->active(), lookup, settings_, true);
      for (const Decision& d : plan.decisions)
        if (const auto* st = std::get_if<StartBoost>(&d)) (void)executor_->start(*st, now, true);
      // Boosts already in force stay lifted too: restoring them now would only slow the
      // final sync. Their records stay in the journal (a tmpfs, gone after the reboot).
      spdlog::info("shutdown: {} limit(s) lifted or left lifted", executor_->activeCount());
      saveBudgets(now, true);
      writeMetrics(now, true);
      return;
    }
    spdlog::error("cannot take a snapshot for the shutdown lift ({}); restoring instead",
                  snap.error().message);
  }
  size_t left = executor_->restoreAll(EndReason::Shutdown, now);
  if (left)
    spdlog::error("{} boost(s) could not be restored; they stay in {} for the next start", left,
                  journal_->path());
  saveBudgets(now, true);
  writeMetrics(now, true);
}

// The budget history of the previous daemon (issue 15): without it a restart would hand every
// tenant a fresh boost_budget. What cannot be read counts as budget spent (budget_store.h).
void Daemon::loadBudgets(TimePoint now) {
  PlannerState state;
  auto parsed = budgets_->load();
  if (!parsed) {
    spdlog::warn(
        "cannot read the budget history {}: {}; every boost budget counts as spent "
        "for one window",
        budgets_->path(), parsed.error().message);
    state.historyLostAt = now;
  } else {
    for (const auto& p : parsed->problems)
      spdlog::warn("budget history {}: {}{}", budgets_->path(), p,
                   parsed->unreadable ? "; every boost budget counts as spent for one window" : "");
    applyLoadedBudgets(parsed.value(), now, state);
    if (!state.usage.empty())
      spdlog::info("budget history: {} account(s) from {}", state.usage.size(), budgets_->path());
  }
  planner_ = Planner(std::move(state));
}

void Daemon::saveBudgets(TimePoint now, bool final) {
  if (!budgets_ || !running_) return;
  Status st = Ok{};
  if (final) {
    st = budgets_->saveFinal(planner_.state(), now);
  } else if (auto r = budgets_->saveIfChanged(planner_.state(), now); !r) {
    st = r.error();
  }
  if (!st) {
    // Logged once per distinct error: a full /run must not flood the journal every tick.
    if (st.error().message != lastBudgetError_)
      spdlog::warn("cannot save the budget history {}: {}", budgets_->path(), st.error().message);
    lastBudgetError_ = st.error().message;
  } else {
    lastBudgetError_.clear();
  }
}

}  // namespace cxiosync
