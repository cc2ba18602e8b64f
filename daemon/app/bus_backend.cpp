// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/app/bus_backend.h"

#include <time.h>

#include <cerrno>
#include <cstring>

#include "cxiosync_version.h"
#include "daemon/core/exit_codes.h"
#include "daemon/kernel/caller_privilege.h"
#include "daemon/log/logging.h"
#include "daemon/sense/detector.h"
#include "daemon/sources/config_loader.h"
#include "dbus/bus_server.h"
#include "policy/bytes_text.h"
#include "policy/config/values.h"
#include "policy/model/effective_limit.h"

namespace cxiosync {

namespace {

// Loop calls submitted and not answered yet (each LoopSetup/Detach/Set* is one at a time);
// beyond it they answer Busy. 64 pinned backing fds stay far below the fd headroom check.
constexpr size_t kMaxLoopJobs = 64;

uint64_t realtimeUsecNow() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

uint64_t usecBetween(TimePoint from, TimePoint to) {
  if (to <= from) return 0;
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(to - from).count());
}

int64_t usecOf(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::string endReasonText(EndReason r) {
  return endReasonName(r);
}

}  // namespace

// ---- BusBackend ------------------------------------------------------------------------

BusBackend::BusBackend(Daemon& daemon, RuntimePolicyStore& store)
    : daemon_(daemon), store_(store), startedRealtimeUsec_(realtimeUsecNow()) {}

dbus::StatusInfo BusBackend::status() {
  dbus::StatusInfo s;
  s.version = CXIOSYNC_VERSION;
  s.detector = detectorKindName(daemon_.sensors().detectorKind());
  s.dryRun = daemon_.settings().dryRun;
  s.state = ticked_ ? "running" : "starting";
  s.startedRealtimeUsec = startedRealtimeUsec_;
  s.cgroupRoot = daemon_.options().cgroupRoot;
  s.activeBoosts = static_cast<uint32_t>(daemon_.executor().activeCount());
  s.activeSyncers = static_cast<uint32_t>(syncers_.size());
  for (const auto& [k, n] : daemon_.executor().stats().boostsBySyscall) s.boostsTotal += n;
  s.configFiles = daemon_.config().files;
  return s;
}

Status BusBackend::checkExists(const CgroupPath& cgroup) {
  auto dir = daemon_.sensors().cgroupFs().openDir(cgroup);
  if (dir) return Ok{};
  const int e = dir.error().code;
  const std::string where = cgroup.display() + " under " + daemon_.options().cgroupRoot;
  if (e == ENOENT || e == ENOTDIR || e == ELOOP || e == ENODEV || e == ESTALE || e == EXDEV)
    return dbus::noSuchCgroup("No cgroup " + where +
                              (e == ELOOP || e == EXDEV ? " (a symlink is not a cgroup)" : ""));
  return dbus::failed("Cannot open cgroup " + where + ": " + dir.error().message,
                      e == 0 ? EIO : (e == EINVAL ? EIO : e));
}

Result<dbus::CgroupInfo> BusBackend::info(const CgroupPath& cgroup) {
  const CgroupFs& fs = daemon_.sensors().cgroupFs();
  auto dir = fs.openDir(cgroup);
  if (!dir) {
    if (auto st = checkExists(cgroup); !st) return st.error();
    return dbus::failed("cannot open " + cgroup.display());
  }
  dbus::CgroupInfo c;
  c.path = cgroup;
  // The root has no io.max; a cgroup without the io controller has none either.
  if (!cgroup.isRoot()) {
    auto own = fs.readIoMax(*dir);
    if (!own && !isGone(own.error()))
      return dbus::failed("cannot read io.max of " + cgroup.display() + ": " + own.error().message);
    if (own && own->has_value()) c.ioMax = **own;
  }
  auto mem = fs.readMemoryStat(*dir);
  if (mem && mem->has_value()) {
    c.fileDirty = (*mem)->fileDirty();
    c.fileWriteback = (*mem)->fileWriteback();
  }
  // Effective limits: io.max of every ancestor (root has none), read now.
  IoMaxByCgroup lines;
  std::set<DevNum> devices;
  for (const auto& a : cgroup.ancestorsAndSelf()) {
    std::vector<IoMaxEntry> entries;
    if (a == cgroup) {
      entries = c.ioMax;
    } else if (!a.isRoot()) {
      auto ad = fs.openDir(a);
      if (!ad) continue;
      auto am = fs.readIoMax(*ad);
      if (am && am->has_value()) entries = **am;
    }
    for (const auto& e : entries) devices.insert(e.dev);
    if (!entries.empty()) lines[a] = std::move(entries);
  }
  for (const auto& dev : devices) {
    EffectiveWriteLimit eff = effectiveWriteLimit(lines, cgroup, dev);
    if (!eff.finite()) continue;
    dbus::EffectiveLimit el;
    el.device = dev;
    el.wbps = eff.wbps.value;
    el.wiops = eff.wiops.value;
    if (eff.wbps.holder) el.wbpsHolder = *eff.wbps.holder;
    if (eff.wiops.holder) el.wiopsHolder = *eff.wiops.holder;
    c.effectiveLimits.push_back(el);
  }
  daemon_.trackPolicyOf(cgroup);  // a unit's drop-ins, also for a cgroup no snapshot held
  c.policy = daemon_.resolver().resolve(cgroup);
  for (const auto& a : daemon_.executor().active())
    if (a.cgroup == cgroup) c.boosted = true;
  return c;
}

Result<std::vector<dbus::CgroupInfo>> BusBackend::listCgroups() {
  // What the daemon tracks: the cgroups of the last snapshot (limited ones, their subtrees,
  // syncers' cgroups), every cgroup a policy layer names, the root and its children.
  std::set<CgroupPath> set = seenCgroups_;
  set.insert(CgroupPath{});
  for (const auto& [rel, settings] : daemon_.resolver().table())
    if (auto p = CgroupPath::parse(rel)) set.insert(*p);
  const CgroupFs& fs = daemon_.sensors().cgroupFs();
  if (auto root = fs.openDir(CgroupPath{})) {
    if (auto kids = fs.listChildren(*root))
      for (const auto& k : *kids)
        if (auto p = CgroupPath::parse(k)) set.insert(*p);
  }
  std::vector<dbus::CgroupInfo> out;
  for (const auto& cg : set) {
    auto i = info(cg);
    if (i) {
      out.push_back(std::move(*i));
    } else if (dbus::errorKindOf(i.error()) != dbus::ErrorKind::NoSuchCgroup) {
      return i.error();
    }
  }
  return out;
}

Result<dbus::CgroupInfo> BusBackend::showCgroup(const CgroupPath& cgroup) {
  return info(cgroup);
}

dbus::BoostInfo BusBackend::boostInfo(const ActiveBoost& a, TimePoint now) const {
  dbus::BoostInfo b;
  b.cgroup = a.cgroup;
  b.dirtier = a.cgroup;
  b.device = a.device;
  b.original = a.original.limits;
  b.boosted = a.boosted.limits;
  b.durationUsec = usecBetween(a.started, now);
  const uint64_t realNow = realtimeUsecNow();
  b.startedRealtimeUsec = realNow > b.durationUsec ? realNow - b.durationUsec : 0;
  b.syncerTids = a.syncerTids;
  b.shutdownLift = a.shutdownLift;
  auto it = boosts_.find({a.cgroup, a.device});
  if (it != boosts_.end()) {
    b.dirtier = it->second.dirtier;
    b.reason = it->second.reason;
  }
  if (b.reason.empty())
    b.reason = a.shutdownLift ? "lift_on_shutdown" : "recovered from the journal";
  return b;
}

std::vector<dbus::BoostInfo> BusBackend::listBoosts() {
  std::vector<dbus::BoostInfo> out;
  const TimePoint now = Clock::now();
  for (const auto& a : daemon_.executor().active()) out.push_back(boostInfo(a, now));
  return out;
}

dbus::SyncerInfo BusBackend::syncerInfo(const Syncer& s, TimePoint now) const {
  dbus::SyncerInfo i;
  i.tid = s.tid;
  i.pid = s.pid;
  i.comm = s.comm;
  i.cgroup = s.cgroup;
  i.syscall = syncSyscallName(s.syscall);
  i.targetDevice = s.targetDevice;
  i.durationUsec = usecBetween(s.since, now);
  i.state = "waiting";
  for (const auto& a : daemon_.executor().active())
    for (int64_t t : a.syncerTids)
      if (t == s.tid && !a.shutdownLift) i.state = "boosting";
  if (i.state != "boosting") {
    auto it = refused_.find({s.tid, usecOf(s.since)});
    if (it != refused_.end()) i.state = it->second;
  }
  return i;
}

std::vector<dbus::SyncerInfo> BusBackend::listSyncers() {
  std::vector<dbus::SyncerInfo> out;
  const TimePoint now = Clock::now();
  for (const auto& s : syncers_) out.push_back(syncerInfo(s, now));
  return out;
}

std::string BusBackend::metrics() {
  return formatMetrics(daemon_.metricsSnapshot(Clock::now()));
}

Status BusBackend::change(const CgroupPath& cgroup, const char* knob, std::string value,
                          const dbus::ChangeOptions& opt) {
  if (auto st = checkExists(cgroup); !st) return st;
  if (auto st = store_.set(cgroup, knob, value, opt.runtime); !st) {
    if (st.error().code == EINVAL) return dbus::invalidArgument(st.error().message);
    return dbus::failed("cannot save the runtime policy: " + st.error().message,
                        st.error().code ? st.error().code : EIO);
  }
  spdlog::info(
      "runtime policy: {}={} on {}{} by uid {}  action=policy-change cgroup={} knob={} "
      "value={} persistent={}",
      knob, value, cgroup.display(), opt.runtime ? " (until reboot)" : "", opt.callerUid,
      logQuote(cgroup.display()), knob, logQuote(value), opt.runtime ? "no" : "yes");
  daemon_.setRuntimePolicy(store_.layer());
  return Ok{};
}

Status BusBackend::setIsolation(const CgroupPath& cgroup, bool on, const dbus::ChangeOptions& opt) {
  return change(cgroup, "sync_isolation", formatBoolean(on), opt);
}

Status BusBackend::setBoostPolicy(const CgroupPath& cgroup, BoostPermission permission,
                                  const dbus::ChangeOptions& opt) {
  return change(cgroup, "boost", formatBoostPermission(permission), opt);
}

Status BusBackend::setBoostCeiling(const CgroupPath& cgroup, BoostCeiling ceiling,
                                   const dbus::ChangeOptions& opt) {
  return change(cgroup, "boost_ceiling", formatBoostCeiling(ceiling), opt);
}

Status BusBackend::setTenant(const CgroupPath& cgroup, bool on, const dbus::ChangeOptions& opt) {
  return change(cgroup, "tenant", formatBoolean(on), opt);
}

Status BusBackend::resetPolicy(const CgroupPath& cgroup, const dbus::ChangeOptions& opt) {
  // A cgroup that is gone may still carry runtime settings: those can always be dropped.
  if (!store_.has(cgroup)) return checkExists(cgroup);
  auto r = store_.reset(cgroup);
  if (!r)
    return dbus::failed("cannot save the runtime policy: " + r.error().message,
                        r.error().code ? r.error().code : EIO);
  spdlog::info("runtime policy: reset {} by uid {}  action=policy-reset cgroup={}",
               cgroup.display(), opt.callerUid, logQuote(cgroup.display()));
  daemon_.setRuntimePolicy(store_.layer());
  return Ok{};
}

Status BusBackend::reload() {
  // Validate first so that the caller gets the error; Daemon::reload() re-reads and applies.
  const std::string& path = daemon_.options().configPath;
  auto cfg = checkConfigPath(path);
  if (!cfg) {
    const Error& e = cfg.error();
    const bool missingDefault = e.code == ENOENT && path == Options{}.configPath;
    if (!missingDefault) {
      if (e.code == 0 || e.code == EINVAL) return dbus::invalidArgument(e.message);
      return dbus::failed("cannot read the configuration: " + e.message, EIO);
    }
  }
  // BusServer announces PolicyChanged for its own Reload: afterReload() must not repeat it.
  busReload_ = true;
  daemon_.reload("D-Bus Reload");
  busReload_ = false;
  return Ok{};
}

void BusBackend::afterTick(const Snapshot& snapshot, const PlanResult& plan) {
  const bool first = !ticked_;
  ticked_ = true;
  syncers_ = snapshot.syncers;
  seenCgroups_.clear();
  for (const auto& [path, st] : snapshot.cgroups) seenCgroups_.insert(path);

  // Syncers: new ones are announced; refusals remembered per sync call.
  std::set<std::pair<int64_t, int64_t>> current;
  for (const auto& s : snapshot.syncers) {
    auto key = std::make_pair(s.tid, usecOf(s.since));
    current.insert(key);
    if (!knownSyncers_.count(key) && events_) events_->syncDetected(syncerInfo(s, snapshot.now));
  }
  knownSyncers_ = std::move(current);
  for (auto it = refused_.begin(); it != refused_.end();)
    it = knownSyncers_.count(it->first) ? std::next(it) : refused_.erase(it);

  std::map<BoostKey, const StartBoost*> starts;
  std::map<BoostKey, EndReason> ends;
  for (const Decision& d : plan.decisions) {
    if (const auto* st = std::get_if<StartBoost>(&d)) {
      starts[{st->cgroup, st->device}] = st;
    } else if (const auto* r = std::get_if<RestoreBoost>(&d)) {
      ends[{r->cgroup, r->device}] = r->why;
    } else if (const auto* f = std::get_if<Refuse>(&d)) {
      refused_[{f->syncer.tid, usecOf(f->syncer.since)}] = refuseReasonName(f->why);
    }
  }

  // Boosts: compare what is in force now with what was after the last tick.
  const TimePoint now = Clock::now();
  std::map<BoostKey, BoostMeta> next;
  for (const auto& a : daemon_.executor().active()) {
    BoostKey key{a.cgroup, a.device};
    auto old = boosts_.find(key);
    if (old != boosts_.end()) {
      BoostMeta m = old->second;
      m.boost = a;
      next[key] = std::move(m);
      continue;
    }
    BoostMeta m;
    m.dirtier = a.cgroup;
    m.started = a.started;
    m.boost = a;
    if (auto s = starts.find(key); s != starts.end()) {
      m.dirtier = s->second->dirtier;
      m.reason = s->second->reason;
    }
    next[key] = m;
    boosts_[key] = m;  // for boostInfo()
    if (!first && events_) events_->boostStarted(boostInfo(a, now));
  }
  for (const auto& [key, m] : boosts_) {
    if (next.count(key)) continue;
    if (events_) {
      dbus::BoostInfo b = boostInfo(m.boost, now);
      b.dirtier = m.dirtier;
      b.reason = m.reason;
      auto e = ends.find(key);
      events_->boostEnded(b, e != ends.end() ? endReasonText(e->second) : "restored");
    }
  }
  boosts_ = std::move(next);
  if (first && events_) events_->propertiesMayHaveChanged();
}

void BusBackend::afterReload() {
  if (!events_) return;
  if (!busReload_) events_->policyChanged("", "", "", "config");
  events_->propertiesMayHaveChanged();
}

// ---- DaemonBus -------------------------------------------------------------------------

DaemonBus::DaemonBus(Daemon& daemon, const Options& options)
    : daemon_(daemon), store_(options.stateDir, options.runDir), backend_(daemon, store_) {}

DaemonBus::~DaemonBus() {
  daemon_.setObserver(nullptr);
  removeSources();
  backend_.setEvents(nullptr);
  // First: a job's completion refers to the server and its pending replies.
  loopJobs_.reset();
  server_.reset();
}

void DaemonBus::removeSources() {
  if (source_) daemon_.loop().removeSource(source_);
  if (eventSource_) daemon_.loop().removeSource(eventSource_);
  source_ = eventSource_ = 0;
}

std::unique_ptr<DaemonBus> DaemonBus::attach(Daemon& daemon, const Options& options,
                                             dbus::LoopBackend* loops) {
  std::unique_ptr<DaemonBus> b(new DaemonBus(daemon, options));
  auto report = b->store_.load();
  for (const auto& p : report.problems) spdlog::warn("runtime policy: {}", p);
  if (report.persistent || report.volatileCount)
    spdlog::info("runtime policy: {} cgroup(s) from {}, {} from {} (until reboot)",
                 report.persistent, b->store_.persistentPath(), report.volatileCount,
                 b->store_.volatilePath());
  daemon.setRuntimePolicy(b->store_.layer());
  daemon.setObserver(&b->backend_);

  if (options.bus == "none") {
    spdlog::info("D-Bus API disabled (--bus=none)");
    return b;
  }
  auto target = dbus::BusTarget::parse(options.bus);
  if (!target) {
    spdlog::warn("D-Bus API disabled: {}", target.error().message);
    return b;
  }
  dbus::BusServerOptions so;
  so.bus = *target;
  so.loopBackend = loops;
  // Callers are processes on the real bus: the real /proc, whatever --proc-root says.
  so.rootCallerProblem = [](const dbus::CallerProcess& p) {
    if (p.pid > static_cast<uint32_t>(INT32_MAX)) return std::string("pid out of range");
    return rootCallerProblem(static_cast<pid_t>(p.pid), p.pidfd);
  };
  if (loops) {
    auto q = WorkQueue::create(daemon.loop(), kMaxLoopJobs);
    if (!q) {
      spdlog::warn("loop devices unavailable: cannot start their worker: {}", q.error().message);
      so.loopBackend = nullptr;
    } else {
      b->loopJobs_ = std::move(*q);
      WorkQueue* jobs = b->loopJobs_.get();
      so.loopJobs = [jobs](std::function<void()> work, std::function<void()> done) {
        return jobs->submit(std::move(work), std::move(done));
      };
    }
  }
  // The server's lines quote cgroup names and callers' input as bytes: logged as text, in the
  // escape D-Bus and logQuote use (a line that is not UTF-8 is a blob to journald).
  so.log = [](dbus::BusLogLevel level, const std::string& bytes) {
    const std::string message = textFromBytes(bytes);
    switch (level) {
      case dbus::BusLogLevel::Notice:
        spdlog::info("D-Bus: {}", message);
        break;
      case dbus::BusLogLevel::Info:
        spdlog::info("D-Bus: {}", message);
        break;
      case dbus::BusLogLevel::Warning:
        spdlog::warn("D-Bus: {}", message);
        break;
    }
  };
  auto server = dbus::BusServer::create(b->backend_, so);
  if (!server) {
    spdlog::warn(
        "D-Bus API unavailable, running without it (sync isolation works; cxiosyncctl "
        "does not): {}",
        server.error().message);
    return b;
  }
  b->server_ = std::move(server.value());
  dbus::BusServer* srv = b->server_.get();
  DaemonBus* self = b.get();
  auto onBus = [self, srv](uint32_t) {
    if (srv->process()) return;
    // The bus daemon went away or dropped us: this connection cannot come back, and running
    // on without the API would leave it gone silently. Restore every boost (Daemon::run after
    // the loop) and exit non-zero: Restart=on-failure starts a daemon that takes the name.
    spdlog::error(
        "lost the D-Bus connection; restoring every boost and exiting with status {} "
        "(systemd restarts cxiosyncd)",
        kExitBusLost);
    self->backend_.setEvents(nullptr);
    self->removeSources();
    self->daemon_.loop().exit(kExitBusLost);
  };
  auto id = daemon.loop().addIo(srv->fd(), EPOLLIN, onBus, [srv]() -> EventLoop::Prepared {
    auto p = srv->pollSpec();
    return {
        EventLoop::pollToEpoll(static_cast<short>(p.events)),
        p.timeoutUsec < 0 ? std::nullopt : std::optional(std::chrono::microseconds(p.timeoutUsec))};
  });
  if (!id) {
    spdlog::warn("D-Bus API unavailable: cannot watch the bus fd: {}", id.error().message);
    b->server_.reset();
    return b;
  }
  b->source_ = id.value();
  // sdbus-c++ 2.x announces replies it queued while we were busy (e.g. polkit's answer read
  // during a synchronous call) on this eventfd, not on the bus socket: watch it too.
  if (int eventFd = srv->pollSpec().eventFd; eventFd >= 0) {
    auto ev = daemon.loop().addIo(eventFd, EPOLLIN, onBus);
    if (!ev) {
      spdlog::warn("D-Bus API unavailable: cannot watch the bus eventfd: {}", ev.error().message);
      b->removeSources();
      b->server_.reset();
      return b;
    }
    b->eventSource_ = ev.value();
  }
  b->backend_.setEvents(srv);
  spdlog::info("D-Bus API: {} on the {} bus as {}", dbus::kBusName, target->describe(),
               srv->uniqueName());
  return b;
}

}  // namespace cxiosync
