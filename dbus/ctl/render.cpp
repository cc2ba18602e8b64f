#include "dbus/ctl/render.h"

#include <cerrno>
#include <cstdlib>

#include "dbus/ctl/format.h"

namespace cxiosync::ctl {

using dbus::kWireMax;

namespace {

Json limit(uint64_t v) {
  return v == kWireMax ? Json() : Json(v);
}

std::string green(const std::string& s, bool color) {
  return color ? "\033[0;1;32m" + s + "\033[0m" : s;
}
std::string red(const std::string& s, bool color) {
  return color ? "\033[0;1;31m" + s + "\033[0m" : s;
}

std::string yesNo(bool b) {
  return b ? "yes" : "no";
}

// Binding write limit across devices, for the list table: the tightest wbps, and where.
std::string tightestWbps(const dbus::CgroupView& c) {
  uint64_t best = kWireMax;
  std::string dev;
  for (const auto& e : c.effective) {
    if (e.wbps < best) {
      best = e.wbps;
      dev = e.device;
    }
  }
  if (best == kWireMax) return "-";
  return formatRate(best) + " (" + dev + ")";
}

}  // namespace

Json statusJson(const dbus::StatusView& s) {
  Json files = Json::array();
  for (const auto& f : s.configFiles) files.push(f);
  Json o = Json::object();
  o.set("running", true)
      .set("version", s.version)
      .set("state", s.state)
      .set("state_detail", s.stateDetail)
      .set("detector", s.detector)
      .set("dry_run", s.dryRun)
      .set("started_realtime_usec", s.startedRealtimeUsec)
      .set("cgroup_root", s.cgroupRoot)
      .set("active_boosts", s.activeBoosts)
      .set("active_syncers", s.activeSyncers)
      .set("boosts_total", s.boostsTotal)
      .set("config_files", std::move(files));
  return o;
}

std::string statusText(const dbus::StatusView& s, const RenderStyle& st) {
  std::string dot = s.state == "running" ? green("●", st.color) : red("●", st.color);
  std::string out = dot + " cxiosyncd - sync() priority-inversion guard\n";
  auto row = [&](const char* k, const std::string& v) {
    std::string key = k;
    out += std::string(12 - std::min<size_t>(12, key.size()), ' ') + key + ": " + v + "\n";
  };
  std::string state = s.state == "running" ? green(s.state, st.color) : red(s.state, st.color);
  if (!s.stateDetail.empty()) state += " (" + s.stateDetail + ")";
  row("State", state);
  std::string since = formatTimestamp(s.startedRealtimeUsec);
  if (st.nowRealtimeUsec && s.startedRealtimeUsec && st.nowRealtimeUsec >= s.startedRealtimeUsec) {
    since += "; " + formatDuration(st.nowRealtimeUsec - s.startedRealtimeUsec) + " ago";
  }
  row("Since", since);
  row("Version", s.version);
  row("Detector", s.detector);
  row("Dry run", yesNo(s.dryRun));
  row("Cgroup root", s.cgroupRoot);
  row("Boosts", std::to_string(s.activeBoosts) + " active, " + std::to_string(s.boostsTotal) +
                    " since start");
  row("Syncers", std::to_string(s.activeSyncers) + " active");
  if (s.configFiles.empty()) {
    row("Config", "(built-in defaults)");
  } else {
    for (size_t i = 0; i < s.configFiles.size(); ++i) {
      row(i == 0 ? "Config" : "", s.configFiles[i]);
    }
  }
  return out;
}

Json cgroupJson(const dbus::CgroupView& c) {
  Json ioMax = Json::array();
  for (const auto& l : c.ioMax) {
    ioMax.push(Json::object()
                   .set("device", l.device)
                   .set("rbps", limit(l.rbps))
                   .set("wbps", limit(l.wbps))
                   .set("riops", limit(l.riops))
                   .set("wiops", limit(l.wiops)));
  }
  Json eff = Json::array();
  for (const auto& e : c.effective) {
    eff.push(Json::object()
                 .set("device", e.device)
                 .set("wbps", limit(e.wbps))
                 .set("wiops", limit(e.wiops))
                 .set("wbps_holder", e.wbpsHolder.empty() ? Json() : Json(e.wbpsHolder))
                 .set("wiops_holder", e.wiopsHolder.empty() ? Json() : Json(e.wiopsHolder)));
  }
  Json policy = Json::object();
  for (const auto& p : c.policy) {
    policy.set(p.knob, Json::object().set("value", p.value).set("source", p.source));
  }
  Json o = Json::object();
  o.set("cgroup", c.path)
      .set("io_max", std::move(ioMax))
      .set("effective_limits", std::move(eff))
      .set("file_dirty", c.fileDirty)
      .set("file_writeback", c.fileWriteback)
      .set("policy", std::move(policy))
      .set("boosted", c.boosted);
  return o;
}

Json cgroupsJson(const std::vector<dbus::CgroupView>& list) {
  Json a = Json::array();
  for (const auto& c : list) a.push(cgroupJson(c));
  return a;
}

std::string cgroupsText(const std::vector<dbus::CgroupView>& list, const RenderStyle& st) {
  Table t(
      {"CGROUP", "ISOLATION", "BOOST", "CEILING", "WRITE LIMIT", "DIRTY", "WRITEBACK", "BOOSTED"});
  t.rightAlign(5);
  t.rightAlign(6);
  for (const auto& c : list) {
    t.addRow({c.path, c.knob("sync_isolation"), c.knob("boost"), c.knob("boost_ceiling"),
              tightestWbps(c), formatBytes(c.fileDirty), formatBytes(c.fileWriteback),
              c.boosted ? green("yes", st.color) : "no"});
  }
  std::string out = t.render(st.legend, st.color);
  if (st.legend) {
    out += "\n" + std::to_string(list.size()) + (list.size() == 1 ? " cgroup" : " cgroups") +
           " listed.\n";
  }
  return out;
}

std::string cgroupText(const dbus::CgroupView& c, const RenderStyle& st) {
  std::string out = (c.boosted ? green("●", st.color) : std::string("○")) + " " + c.path +
                    (c.boosted ? " (boosted)" : "") + "\n";
  out += "\nPolicy:\n";
  Table p({"KNOB", "VALUE", "SOURCE"});
  for (const auto& r : c.policy) p.addRow({r.knob, r.value, r.source});
  out += p.render(true, st.color);
  out += "\nio.max:\n";
  if (c.ioMax.empty()) {
    out += "  (none)\n";
  } else {
    Table l({"DEVICE", "RBPS", "WBPS", "RIOPS", "WIOPS"});
    for (const auto& r : c.ioMax) {
      l.addRow({r.device, formatRate(r.rbps), formatRate(r.wbps), formatIops(r.riops),
                formatIops(r.wiops)});
    }
    out += l.render(true, st.color);
  }
  out += "\nEffective write limits:\n";
  if (c.effective.empty()) {
    out += "  (none: writes are not limited here or above)\n";
  } else {
    Table e({"DEVICE", "WBPS", "HELD BY", "WIOPS", "HELD BY"});
    for (const auto& r : c.effective) {
      e.addRow({r.device, formatRate(r.wbps), r.wbpsHolder.empty() ? "-" : r.wbpsHolder,
                formatIops(r.wiops), r.wiopsHolder.empty() ? "-" : r.wiopsHolder});
    }
    out += e.render(true, st.color);
  }
  out += "\nPage cache: " + formatBytes(c.fileDirty) + " dirty, " + formatBytes(c.fileWriteback) +
         " under writeback\n";
  return out;
}

Json boostsJson(const std::vector<dbus::BoostView>& list) {
  auto limits = [](const dbus::LimitsView& l) {
    return Json::object()
        .set("rbps", limit(l.rbps))
        .set("wbps", limit(l.wbps))
        .set("riops", limit(l.riops))
        .set("wiops", limit(l.wiops));
  };
  Json a = Json::array();
  for (const auto& b : list) {
    Json tids = Json::array();
    for (auto t : b.syncerTids) tids.push(t);
    a.push(Json::object()
               .set("cgroup", b.cgroup)
               .set("dirtier", b.dirtier)
               .set("device", b.device)
               .set("original", limits(b.original))
               .set("boosted", limits(b.boosted))
               .set("started_realtime_usec", b.startedRealtimeUsec)
               .set("duration_usec", b.durationUsec)
               .set("syncer_tids", std::move(tids))
               .set("reason", b.reason)
               .set("shutdown_lift", b.shutdownLift));
  }
  return a;
}

std::string boostsText(const std::vector<dbus::BoostView>& list, const RenderStyle& st) {
  Table t({"CGROUP", "DEVICE", "WBPS", "BOOSTED TO", "FOR", "SYNCERS", "DIRTIER", "REASON"});
  for (const auto& b : list) {
    std::string tids;
    for (auto tid : b.syncerTids) tids += (tids.empty() ? "" : ",") + std::to_string(tid);
    t.addRow({b.cgroup, b.device, formatRate(b.original.wbps), formatRate(b.boosted.wbps),
              formatDuration(b.durationUsec), tids.empty() ? "-" : tids, b.dirtier,
              b.shutdownLift ? "shutdown lift" : b.reason});
  }
  std::string out = list.empty() && st.legend ? std::string() : t.render(st.legend, st.color);
  if (st.legend) {
    out += (list.empty() ? "" : "\n") + std::to_string(list.size()) +
           (list.size() == 1 ? " boost" : " boosts") + " active.\n";
  }
  return out;
}

Json syncersJson(const std::vector<dbus::SyncerView>& list) {
  Json a = Json::array();
  for (const auto& s : list) {
    a.push(Json::object()
               .set("tid", s.tid)
               .set("pid", s.pid)
               .set("comm", s.comm)
               .set("cgroup", s.cgroup)
               .set("syscall", s.syscall)
               .set("device", s.device.empty() ? Json() : Json(s.device))
               .set("duration_usec", s.durationUsec)
               .set("state", s.state));
  }
  return a;
}

std::string syncersText(const std::vector<dbus::SyncerView>& list, const RenderStyle& st) {
  Table t({"TID", "PID", "COMM", "SYSCALL", "DEVICE", "FOR", "STATE", "CGROUP"});
  t.rightAlign(0);
  t.rightAlign(1);
  for (const auto& s : list) {
    t.addRow({std::to_string(s.tid), std::to_string(s.pid), s.comm, s.syscall,
              s.device.empty() ? "-" : s.device, formatDuration(s.durationUsec), s.state,
              s.cgroup});
  }
  std::string out = list.empty() && st.legend ? std::string() : t.render(st.legend, st.color);
  if (st.legend) {
    out += (list.empty() ? "" : "\n") + std::to_string(list.size()) +
           (list.size() == 1 ? " syncer" : " syncers") + " in a sync call.\n";
  }
  return out;
}

Json eventJson(const dbus::EventView& e) {
  Json o = Json::object();
  o.set("event", e.name);
  for (const auto& [k, v] : e.fields) o.set(k, v);
  for (const auto& [k, v] : e.numbers) {
    bool isLimit = k == "original_wbps" || k == "boosted_wbps";
    o.set(k, isLimit ? limit(v) : Json(v));
  }
  return o;
}

std::string eventText(const dbus::EventView& e) {
  std::string out = e.name;
  for (const auto& [k, v] : e.fields) out += " " + k + "=" + (v.empty() ? "\"\"" : v);
  for (const auto& [k, v] : e.numbers) {
    std::string shown;
    if (k == "original_wbps" || k == "boosted_wbps") {
      shown = formatRate(v);
    } else if (k == "duration_usec") {
      shown = formatDuration(v);
    } else {
      shown = std::to_string(v);
    }
    out += " " + k + "=" + (shown.find(' ') != std::string::npos ? "\"" + shown + "\"" : shown);
  }
  return out;
}

Result<Json> metricsJson(const std::string& text) {
  Json a = Json::array();
  size_t lineNo = 0, pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++lineNo;
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const std::string& why) {
      return makeError("metrics line " + std::to_string(lineNo) + ": " + why, EPROTO);
    };
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    std::string name = line.substr(0, i);
    if (name.empty()) return bad("no metric name");
    Json labels = Json::object();
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          return bad("malformed label");
        }
        std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) return bad("unterminated label value");
        labels.set(key, value);
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return bad("unterminated labels");
      ++i;
    }
    while (i < line.size() && line[i] == ' ') ++i;
    std::string valueText = line.substr(i);
    auto sp = valueText.find(' ');  // optional timestamp
    if (sp != std::string::npos) valueText = valueText.substr(0, sp);
    if (valueText.empty()) return bad("no value");
    char* end = nullptr;
    double v = std::strtod(valueText.c_str(), &end);
    if (end == valueText.c_str() || *end != '\0') return bad("value is not a number");
    a.push(Json::object().set("name", name).set("labels", std::move(labels)).set("value", v));
  }
  return a;
}

}  // namespace cxiosync::ctl
