// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/wire.h"

#include <cerrno>

#include "dbus/sdbus_compat.h"
#include "dbus/validate.h"
#include "policy/bytes_text.h"

namespace cxiosync::dbus {

std::string CgroupView::knob(const std::string& name) const {
  for (const auto& row : policy) {
    if (row.knob == name) return row.value;
  }
  return {};
}

namespace wire {

namespace {

uint64_t orMax(const std::optional<uint64_t>& v) {
  return v ? *v : kWireMax;
}

Limits4 limits4(const IoLimits& l) {
  return Limits4{orMax(l.rbps), orMax(l.wbps), orMax(l.riops), orMax(l.wiops)};
}

LimitsView limitsView(const Limits4& l) {
  return LimitsView{l.get<0>(), l.get<1>(), l.get<2>(), l.get<3>()};
}

std::vector<std::string> texts(const std::vector<std::string>& bytes) {
  std::vector<std::string> out;
  out.reserve(bytes.size());
  for (const auto& b : bytes) out.push_back(text(b));
  return out;
}

}  // namespace

std::string text(std::string_view bytes) {
  return textFromBytes(bytes);
}

std::string describeSource(const ValueSource& source) {
  switch (source.kind) {
    case ValueSource::Kind::Default:
      return "default";
    case ValueSource::Kind::Runtime:
      return "runtime";
    case ValueSource::Kind::Yaml:
    case ValueSource::Kind::DropIn:
      break;
  }
  if (source.file.empty()) return source.kind == ValueSource::Kind::Yaml ? "config" : "drop-in";
  if (source.line <= 0) return source.file;
  return source.file + ":" + std::to_string(source.line);
}

std::vector<PolicyRow> policyRows(const EffectivePolicy& p) {
  std::vector<PolicyRow> rows;
  rows.push_back({"sync_isolation", p.syncIsolation.value ? "on" : "off",
                  describeSource(p.syncIsolation.source)});
  rows.push_back({"boost", boostPermissionName(p.boost.value), describeSource(p.boost.source)});
  rows.push_back({"boost_ceiling", formatBoostCeiling(p.boostCeiling.value),
                  describeSource(p.boostCeiling.source)});
  rows.push_back({"max_boost_seconds", std::to_string(p.maxBoost.value.count()),
                  describeSource(p.maxBoost.source)});
  rows.push_back({"boost_budget",
                  std::to_string(p.boostBudget.value.percent) + "%/" +
                      std::to_string(p.boostBudget.value.window.count()) + "s",
                  describeSource(p.boostBudget.source)});
  rows.push_back({"tenant", p.tenant.value ? "on" : "off", describeSource(p.tenant.source)});
  rows.push_back(
      {"tenant_sync", formatTenantSync(p.tenantSync.value), describeSource(p.tenantSync.source)});
  return rows;
}

Options toWire(const StatusInfo& s) {
  Options o;
  o["version"] = sdbus::Variant(text(s.version));
  o["detector"] = sdbus::Variant(text(s.detector));
  o["dry_run"] = sdbus::Variant(s.dryRun);
  o["state"] = sdbus::Variant(text(s.state));
  o["state_detail"] = sdbus::Variant(text(s.stateDetail));
  o["started_realtime_usec"] = sdbus::Variant(s.startedRealtimeUsec);
  o["cgroup_root"] = sdbus::Variant(text(s.cgroupRoot));
  o["active_boosts"] = sdbus::Variant(s.activeBoosts);
  o["active_syncers"] = sdbus::Variant(s.activeSyncers);
  o["boosts_total"] = sdbus::Variant(s.boostsTotal);
  o["config_files"] = sdbus::Variant(texts(s.configFiles));
  return o;
}

Cgroup toWire(const CgroupInfo& c) {
  std::vector<Limit> limits;
  for (const auto& e : c.ioMax) {
    limits.emplace_back(e.dev.str(), orMax(e.limits.rbps), orMax(e.limits.wbps),
                        orMax(e.limits.riops), orMax(e.limits.wiops));
  }
  std::vector<Effective> effective;
  for (const auto& e : c.effectiveLimits) {
    effective.emplace_back(e.device.str(), e.wbps, e.wiops,
                           e.wbps == kUnlimited ? std::string() : text(e.wbpsHolder.display()),
                           e.wiops == kUnlimited ? std::string() : text(e.wiopsHolder.display()));
  }
  std::vector<Policy> policy;
  for (auto& row : policyRows(c.policy))
    policy.emplace_back(text(row.knob), text(row.value), text(row.source));
  return Cgroup{
      text(c.path.display()), std::move(limits), std::move(effective), c.fileDirty, c.fileWriteback,
      std::move(policy),      c.boosted};
}

Boost toWire(const BoostInfo& b) {
  return Boost{text(b.cgroup.display()), text(b.dirtier.display()),
               b.device.str(),           limits4(b.original),
               limits4(b.boosted),       b.startedRealtimeUsec,
               b.durationUsec,           b.syncerTids,
               text(b.reason),           b.shutdownLift};
}

Syncer toWire(const SyncerInfo& s) {
  return Syncer{s.tid,           s.pid,
                text(s.comm),    text(s.cgroup.display()),
                text(s.syscall), s.targetDevice ? s.targetDevice->str() : std::string(),
                s.durationUsec,  text(s.state)};
}

Result<StatusView> statusFromWire(const Options& o) {
  StatusView s;
  std::string bad;
  bool ok = takeOption(o, "version", s.version, bad) &&
            takeOption(o, "detector", s.detector, bad) && takeOption(o, "dry_run", s.dryRun, bad) &&
            takeOption(o, "state", s.state, bad) &&
            takeOption(o, "state_detail", s.stateDetail, bad) &&
            takeOption(o, "started_realtime_usec", s.startedRealtimeUsec, bad) &&
            takeOption(o, "cgroup_root", s.cgroupRoot, bad) &&
            takeOption(o, "active_boosts", s.activeBoosts, bad) &&
            takeOption(o, "active_syncers", s.activeSyncers, bad) &&
            takeOption(o, "boosts_total", s.boostsTotal, bad) &&
            takeOption(o, "config_files", s.configFiles, bad);
  if (!ok) return makeError("daemon sent status key '" + bad + "' with an unexpected type", EPROTO);
  return s;
}

CgroupView fromWire(const Cgroup& c) {
  CgroupView v;
  v.path = c.get<0>();
  for (const auto& l : c.get<1>()) {
    v.ioMax.push_back({l.get<0>(), l.get<1>(), l.get<2>(), l.get<3>(), l.get<4>()});
  }
  for (const auto& e : c.get<2>()) {
    v.effective.push_back({e.get<0>(), e.get<1>(), e.get<2>(), e.get<3>(), e.get<4>()});
  }
  v.fileDirty = c.get<3>();
  v.fileWriteback = c.get<4>();
  for (const auto& p : c.get<5>()) v.policy.push_back({p.get<0>(), p.get<1>(), p.get<2>()});
  v.boosted = c.get<6>();
  return v;
}

BoostView fromWire(const Boost& b) {
  BoostView v;
  v.cgroup = b.get<0>();
  v.dirtier = b.get<1>();
  v.device = b.get<2>();
  v.original = limitsView(b.get<3>());
  v.boosted = limitsView(b.get<4>());
  v.startedRealtimeUsec = b.get<5>();
  v.durationUsec = b.get<6>();
  v.syncerTids = b.get<7>();
  v.reason = b.get<8>();
  v.shutdownLift = b.get<9>();
  return v;
}

SyncerView fromWire(const Syncer& s) {
  return SyncerView{s.get<0>(), s.get<1>(), s.get<2>(), s.get<3>(),
                    s.get<4>(), s.get<5>(), s.get<6>(), s.get<7>()};
}

void splitOptions(const Options& options, std::map<std::string, std::string>& keys,
                  std::map<std::string, bool>& bools) {
  for (const auto& [key, value] : options) {
    keys[key] = compat::typeOf(value);
    if (value.containsValueOfType<bool>()) bools[key] = value.get<bool>();
  }
}

}  // namespace wire
}  // namespace cxiosync::dbus
