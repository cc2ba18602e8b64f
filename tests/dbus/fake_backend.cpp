// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/dbus/fake_backend.h"

#include <stdexcept>

namespace cxiosync::dbus::testing {

namespace {

constexpr uint64_t kStarted = 1764446400000000;  // 2025-11-29 20:00:00 UTC
const DevNum kSda{8, 0};

CgroupPath P(const char* s) {
  return *CgroupPath::parse(s);
}

IoMaxEntry limit(uint64_t wbps) {
  return IoMaxEntry{kSda, IoLimits{kUnlimited, wbps, kUnlimited, kUnlimited}};
}

ValueSource def() {
  return ValueSource{};
}
ValueSource yaml(int line) {
  return ValueSource{ValueSource::Kind::Yaml, "/etc/cxiosync/cxiosync.yaml", line};
}

}  // namespace

FakeBackend::FakeBackend() {
  tree_[P("/")] = {};
  tree_[P("/init.scope")] = {};
  tree_[P("/system.slice")] = {{}, 4096, 0, {}, false};
  tree_[P("/user.slice")] = {};
  tree_[P("/backup.slice")] = {{limit(1048576)}, 536870912, 1048576, {}, false};
  tree_[P("/a.slice")] = {{limit(10485760)}, 0, 0, {}, false};
  tree_[P("/a.slice/a-b.slice")] = {{}, 8192, 0, {}, false};
  tree_[P("/legacy.slice")] = {};
  tree_[P("/broken.slice")] = {};
}

StatusInfo FakeBackend::status() {
  StatusInfo s;
  s.version = "0.1.0";
  s.detector = "procfs";
  s.dryRun = false;
  s.state = "running";
  s.startedRealtimeUsec = kStarted;
  s.cgroupRoot = "/sys/fs/cgroup";
  s.activeBoosts = extraBoost ? 2 : 1;
  s.activeSyncers = 1;
  s.boostsTotal = 7;
  s.configFiles = {"/etc/cxiosync/cxiosync.yaml"};
  return s;
}

CgroupInfo FakeBackend::info(const CgroupPath& path) const {
  CgroupInfo c;
  c.path = path;
  const Node& n = tree_.at(path);
  c.ioMax = n.ioMax;
  c.fileDirty = n.dirty;
  c.fileWriteback = n.writeback;
  c.boosted = path == P("/backup.slice");
  // Effective write limit: the tightest along the ancestors, with its holder.
  EffectiveLimit eff;
  eff.device = kSda;
  bool any = false;
  for (const auto& a : path.ancestorsAndSelf()) {
    for (const auto& e : tree_.at(a).ioMax) {
      if (e.limits.wbps && *e.limits.wbps < eff.wbps) {
        eff.wbps = *e.limits.wbps;
        eff.wbpsHolder = a;
        any = true;
      }
    }
  }
  if (any) c.effectiveLimits.push_back(eff);
  // Policy: defaults (docs/architecture.md §3), a YAML value for /backup.slice, then runtime
  // overrides; inherited from the closest ancestor that sets a knob.
  EffectivePolicy p;
  p.syncIsolation = {true, def()};
  p.boost = {BoostPermission::Allow, def()};
  p.boostCeiling = {BoostCeiling{}, def()};
  p.maxBoost = {std::chrono::seconds(30), def()};
  p.boostBudget = {BoostBudget{50, std::chrono::seconds(60)}, def()};
  for (const auto& a : path.ancestorsAndSelf()) {
    if (a == P("/user.slice")) p.syncIsolation = {false, def()};
    if (a == P("/backup.slice"))
      p.boostCeiling = {BoostCeiling{BoostCeiling::Kind::Max, 0}, yaml(12)};
    const auto& r = tree_.at(a).runtime;
    if (r.syncIsolation) p.syncIsolation = *r.syncIsolation;
    if (r.boost) p.boost = *r.boost;
    if (r.boostCeiling) p.boostCeiling = *r.boostCeiling;
  }
  p.tenant = {false, def()};
  p.tenantSync = {TenantSync::Self, def()};
  if (const auto& t = tree_.at(path).runtime.tenant) p.tenant = *t;  // not inherited
  c.policy = p;
  return c;
}

Result<std::vector<CgroupInfo>> FakeBackend::listCgroups() {
  std::vector<CgroupInfo> out;
  for (const auto& [path, node] : tree_) out.push_back(info(path));
  return out;
}

Result<CgroupInfo> FakeBackend::showCgroup(const CgroupPath& cgroup) {
  if (!tree_.count(cgroup)) return noSuchCgroup("No cgroup " + cgroup.display());
  if (cgroup == P("/broken.slice")) throw std::runtime_error("fake backend exploded on a read");
  return info(cgroup);
}

std::vector<BoostInfo> FakeBackend::listBoosts() {
  std::vector<BoostInfo> out;
  BoostInfo b;
  b.cgroup = P("/backup.slice");
  b.dirtier = P("/backup.slice");
  b.device = kSda;
  b.original = IoLimits{kUnlimited, 1048576, kUnlimited, kUnlimited};
  b.boosted = IoLimits{kUnlimited, kUnlimited, kUnlimited, kUnlimited};
  b.startedRealtimeUsec = kStarted + 60000000;
  b.durationUsec = 12300000;
  b.syncerTids = {4242};
  b.reason = "sync(2) by 4242 (sync) in /system.slice waits on 512.0 MiB dirty";
  out.push_back(b);
  if (extraBoost) {
    b.cgroup = P("/a.slice");
    b.dirtier = P("/a.slice/a-b.slice");
    b.original.wbps = 10485760;
    out.push_back(b);
  }
  return out;
}

std::vector<SyncerInfo> FakeBackend::listSyncers() {
  SyncerInfo s;
  s.tid = 4242;
  s.pid = 4242;
  s.comm = "sync";
  s.cgroup = P("/system.slice");
  s.syscall = "sync";
  s.durationUsec = 12400000;
  s.state = "boosting";
  SyncerInfo f = s;
  f.tid = 5151;
  f.pid = 5150;
  f.comm = "postgres";
  f.cgroup = P("/backup.slice");
  f.syscall = "fsync";
  f.targetDevice = kSda;
  f.durationUsec = 850;
  f.state = "self-sync";
  return {s, f};
}

std::string FakeBackend::metrics() {
  return "# HELP cxiosync_boosts_total Boosts started.\n"
         "# TYPE cxiosync_boosts_total counter\n"
         "cxiosync_boosts_total 7\n"
         "# TYPE cxiosync_active_boosts gauge\n"
         "cxiosync_active_boosts " +
         std::to_string(extraBoost ? 2 : 1) +
         "\n"
         "cxiosync_boost_seconds_total{cgroup=\"/backup.slice\",device=\"8:0\"} 12.3\n";
}

Status FakeBackend::check(const CgroupPath& cgroup) {
  if (!tree_.count(cgroup))
    return noSuchCgroup("No cgroup " + cgroup.display() + " under /sys/fs/cgroup");
  if (cgroup == P("/legacy.slice")) {
    return notSupported(cgroup.display() + " is on a filesystem without cgroup writeback");
  }
  if (cgroup == P("/broken.slice")) throw std::runtime_error("fake backend exploded");
  return Ok{};
}

Status FakeBackend::setIsolation(const CgroupPath& cgroup, bool on, const ChangeOptions& opt) {
  if (auto s = check(cgroup); !s) return s;
  tree_[cgroup].runtime.syncIsolation =
      Sourced<bool>{on, ValueSource{ValueSource::Kind::Runtime, {}, 0}};
  lastOptions = opt;
  ++mutations;
  return Ok{};
}

Status FakeBackend::setTenant(const CgroupPath& cgroup, bool on, const ChangeOptions& opt) {
  if (auto s = check(cgroup); !s) return s;
  tree_[cgroup].runtime.tenant = Sourced<bool>{on, ValueSource{ValueSource::Kind::Runtime, {}, 0}};
  lastOptions = opt;
  ++mutations;
  return Ok{};
}

Status FakeBackend::setBoostPolicy(const CgroupPath& cgroup, BoostPermission permission,
                                   const ChangeOptions& opt) {
  if (auto s = check(cgroup); !s) return s;
  tree_[cgroup].runtime.boost =
      Sourced<BoostPermission>{permission, ValueSource{ValueSource::Kind::Runtime, {}, 0}};
  lastOptions = opt;
  ++mutations;
  return Ok{};
}

Status FakeBackend::setBoostCeiling(const CgroupPath& cgroup, BoostCeiling ceiling,
                                    const ChangeOptions& opt) {
  if (auto s = check(cgroup); !s) return s;
  tree_[cgroup].runtime.boostCeiling =
      Sourced<BoostCeiling>{ceiling, ValueSource{ValueSource::Kind::Runtime, {}, 0}};
  lastOptions = opt;
  ++mutations;
  return Ok{};
}

Status FakeBackend::resetPolicy(const CgroupPath& cgroup, const ChangeOptions& opt) {
  if (auto s = check(cgroup); !s) return s;
  tree_[cgroup].runtime = {};
  lastOptions = opt;
  ++mutations;
  return Ok{};
}

Status FakeBackend::reload() {
  if (failNextReload) {
    failNextReload = false;
    return invalidArgument(
        "/etc/cxiosync/cxiosync.yaml:7:11: cgroups./system.slice.boost: "
        "invalid value 'maybe': expected allow or deny");
  }
  ++mutations;
  return Ok{};
}

}  // namespace cxiosync::dbus::testing
