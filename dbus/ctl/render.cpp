// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/render.h"

#include <cerrno>
#include <cstdlib>

#include "dbus/ctl/format.h"

namespace cxiosync::ctl {

using dbus::kWireMax;
using output::Cell;
using output::Color;
using output::Column;
using output::Table;

namespace {

Table limitsTable(const dbus::LimitsView& l) {
  Table t({{"rbps", ""}, {"wbps", ""}, {"riops", ""}, {"wiops", ""}});
  t.addRow({Cell::rate(l.rbps), Cell::rate(l.wbps), Cell::iops(l.riops), Cell::iops(l.wiops)});
  return t;
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

// The "N things listed." footer after a table.
std::string footer(size_t n, const char* one, const char* many, const char* tail) {
  return std::to_string(n) + " " + (n == 1 ? one : many) + " " + tail + "\n";
}

Table ioMaxTable(const dbus::CgroupView& c) {
  Table t({{"device", "DEVICE"},
           {"rbps", "RBPS"},
           {"wbps", "WBPS"},
           {"riops", "RIOPS"},
           {"wiops", "WIOPS"}});
  for (const auto& l : c.ioMax) {
    t.addRow({Cell::text(l.device), Cell::rate(l.rbps), Cell::rate(l.wbps), Cell::iops(l.riops),
              Cell::iops(l.wiops)});
  }
  return t;
}

Table effectiveTable(const dbus::CgroupView& c) {
  Table t({{"device", "DEVICE"},
           {"wbps", "WBPS"},
           {"wiops", "WIOPS"},
           {"wbps_holder", "HELD BY"},
           {"wiops_holder", "HELD BY"}});
  t.display({0, 1, 3, 2, 4});
  for (const auto& e : c.effective) {
    t.addRow({Cell::text(e.device), Cell::rate(e.wbps), Cell::iops(e.wiops),
              Cell::textOrNull(e.wbpsHolder), Cell::textOrNull(e.wiopsHolder)});
  }
  return t;
}

// A knob's value as the daemon sends it; a ceiling in bytes/s reads as a rate in the unit it
// was likely written in ("50 MiB/s" for BoostCeiling=50MiB/s, not 52428800). JSON keeps the
// daemon's text.
Cell knobCell(const std::string& knob, const std::string& value) {
  Cell cell = Cell::text(value);
  if (knob == "boost_ceiling" && !value.empty() && value.size() < 21 &&
      value.find_first_not_of("0123456789") == std::string::npos) {
    cell.shown(formatRate(std::strtoull(value.c_str(), nullptr, 10)));
  }
  return cell;
}

Table policyTable(const dbus::CgroupView& c) {
  Table t({{"knob", "KNOB"}, {"value", "VALUE"}, {"source", "SOURCE"}});
  for (const auto& p : c.policy) {
    t.addRow({Cell::text(p.knob), knobCell(p.knob, p.value), Cell::text(p.source)});
  }
  return t;
}

enum CgroupColumn : size_t { kIoMax = 5, kEffective = 6, kPolicy = 9 };

// Every cgroup, one row: the JSON record and the list table's columns.
Table cgroupTable(const std::vector<dbus::CgroupView>& list) {
  Table t({{"cgroup", "CGROUP"},
           {"", "ISOLATION"},
           {"", "BOOST"},
           {"", "CEILING"},
           {"", "WRITE LIMIT"},
           {"io_max", ""},
           {"effective_limits", ""},
           {"file_dirty", "DIRTY", true},
           {"file_writeback", "WRITEBACK", true},
           {"policy", ""},
           {"boosted", "BOOSTED"}});
  for (const auto& c : list) {
    t.addRow({Cell::text(c.path), Cell::text(c.knob("sync_isolation")), Cell::text(c.knob("boost")),
              knobCell("boost_ceiling", c.knob("boost_ceiling")), Cell::text(tightestWbps(c)),
              Cell::nested(ioMaxTable(c)), Cell::nested(effectiveTable(c)), Cell::size(c.fileDirty),
              Cell::size(c.fileWriteback), Cell::nested(policyTable(c), Cell::Nest::Keyed),
              Cell::boolean(c.boosted).color(c.boosted ? Color::Green : Color::None)});
  }
  return t;
}

Table boostTable(const std::vector<dbus::BoostView>& list) {
  Table t({{"cgroup", "CGROUP"},
           {"dirtier", "DIRTIER"},
           {"device", "DEVICE"},
           {"original", ""},
           {"boosted", ""},
           {"", "WBPS"},
           {"", "BOOSTED TO"},
           {"started_realtime_usec", ""},
           {"duration_usec", "FOR"},
           {"syncer_tids", "SYNCERS"},
           {"reason", "REASON"},
           {"shutdown_lift", ""}});
  t.display({0, 2, 5, 6, 8, 9, 1, 10});
  for (const auto& b : list) {
    std::vector<Cell> tids;
    for (auto tid : b.syncerTids) tids.push_back(Cell::uinteger(tid));
    Cell tidCell = Cell::list(std::move(tids));
    if (b.syncerTids.empty()) tidCell.shown("-");
    Cell reason = Cell::text(b.reason);
    if (b.shutdownLift) reason.shown("shutdown lift");
    t.addRow({Cell::text(b.cgroup), Cell::text(b.dirtier), Cell::text(b.device),
              Cell::nested(limitsTable(b.original), Cell::Nest::Object),
              Cell::nested(limitsTable(b.boosted), Cell::Nest::Object), Cell::rate(b.original.wbps),
              Cell::rate(b.boosted.wbps), Cell::uinteger(b.startedRealtimeUsec),
              Cell::duration(b.durationUsec), std::move(tidCell), std::move(reason),
              Cell::boolean(b.shutdownLift)});
  }
  return t;
}

Table syncerTable(const std::vector<dbus::SyncerView>& list) {
  Table t({{"tid", "TID", true},
           {"pid", "PID", true},
           {"comm", "COMM"},
           {"cgroup", "CGROUP"},
           {"syscall", "SYSCALL"},
           {"device", "DEVICE"},
           {"duration_usec", "FOR"},
           {"state", "STATE"}});
  t.display({0, 1, 2, 4, 5, 6, 7, 3});
  for (const auto& s : list) {
    t.addRow({Cell::integer(s.tid), Cell::integer(s.pid), Cell::text(s.comm), Cell::text(s.cgroup),
              Cell::text(s.syscall), Cell::textOrNull(s.device), Cell::duration(s.durationUsec),
              Cell::text(s.state)});
  }
  return t;
}

Table statusTable(const dbus::StatusView& s, const RenderStyle& st) {
  Table t({{"running", ""},
           {"version", "Version"},
           {"state", "State"},
           {"state_detail", ""},
           {"detector", "Detector"},
           {"dry_run", "Dry run"},
           {"started_realtime_usec", "Since"},
           {"cgroup_root", "Cgroup root"},
           {"active_boosts", ""},
           {"active_syncers", "Syncers"},
           {"boosts_total", ""},
           {"", "Boosts"},
           {"config_files", "Config"}});
  t.display({2, 6, 1, 4, 5, 7, 11, 9, 12});
  const bool running = s.state == "running";
  Cell state = Cell::text(s.state).color(running ? Color::Green : Color::Red);
  if (!s.stateDetail.empty()) state.shown(s.state + " (" + s.stateDetail + ")");
  Cell since = Cell::timestamp(s.startedRealtimeUsec);
  if (st.nowRealtimeUsec && s.startedRealtimeUsec && st.nowRealtimeUsec >= s.startedRealtimeUsec) {
    since.shown(formatTimestamp(s.startedRealtimeUsec) + "; " +
                formatDuration(st.nowRealtimeUsec - s.startedRealtimeUsec) + " ago");
  }
  std::vector<Cell> files;
  for (const auto& f : s.configFiles) files.push_back(Cell::text(f));
  Cell config = Cell::list(std::move(files));
  if (s.configFiles.empty()) config.shown("(built-in defaults)");
  t.addRow({Cell::boolean(true), Cell::text(s.version), std::move(state), Cell::text(s.stateDetail),
            Cell::text(s.detector), Cell::boolean(s.dryRun), std::move(since),
            Cell::text(s.cgroupRoot), Cell::uinteger(s.activeBoosts),
            Cell::uinteger(s.activeSyncers).shown(std::to_string(s.activeSyncers) + " active"),
            Cell::uinteger(s.boostsTotal),
            Cell::text(std::to_string(s.activeBoosts) + " active, " +
                       std::to_string(s.boostsTotal) + " since start"),
            std::move(config)});
  return t;
}

// An event: its name, then its fields and numbers as columns named by their keys.
Table eventTable(const dbus::EventView& e) {
  std::vector<Column> cols = {{"event", "EVENT"}};
  std::vector<Cell> row = {Cell::text(e.name)};
  for (const auto& [k, v] : e.fields) {
    cols.push_back({k, k});
    row.push_back(Cell::text(v));
  }
  for (const auto& [k, v] : e.numbers) {
    cols.push_back({k, k});
    if (k == "original_wbps" || k == "boosted_wbps") {
      row.push_back(Cell::rate(v));
    } else if (k == "duration_usec") {
      row.push_back(Cell::duration(v));
    } else {
      row.push_back(Cell::uinteger(v));
    }
  }
  Table t(std::move(cols));
  t.addRow(std::move(row));
  return t;
}

}  // namespace

Json recordJson(std::vector<std::pair<std::string, Cell>> fields) {
  return Json(Table::record(std::move(fields)).rowJson(0));
}

Json statusJson(const dbus::StatusView& s) {
  return Json(statusTable(s, RenderStyle{}).rowJson(0));
}

std::string statusText(const dbus::StatusView& s, const RenderStyle& st) {
  Cell dot = Cell::text("●").color(s.state == "running" ? Color::Green : Color::Red);
  return dot.human(st.color) + " cxiosyncd - sync() priority-inversion guard\n" +
         statusTable(s, st).renderShow(12, st.color);
}

Json cgroupJson(const dbus::CgroupView& c) {
  return Json(cgroupTable({c}).rowJson(0));
}

Json cgroupsJson(const std::vector<dbus::CgroupView>& list) {
  return Json(cgroupTable(list).json());
}

std::string cgroupsText(const std::vector<dbus::CgroupView>& list, const RenderStyle& st) {
  std::string out = cgroupTable(list).render(st.legend, st.color);
  if (st.legend) out += "\n" + footer(list.size(), "cgroup", "cgroups", "listed.");
  return out;
}

std::string cgroupText(const dbus::CgroupView& c, const RenderStyle& st) {
  const Table t = cgroupTable({c});
  auto section = [&](size_t column) { return t.cell(0, column).table()->render(true, st.color); };
  Cell dot = c.boosted ? Cell::text("●").color(Color::Green) : Cell::text("○");
  std::string out =
      dot.human(st.color) + " " + t.cell(0, 0).human() + (c.boosted ? " (boosted)" : "") + "\n";
  out += "\nPolicy:\n" + section(kPolicy);
  out += "\nio.max:\n" + (c.ioMax.empty() ? "  (none)\n" : section(kIoMax));
  out += "\nEffective write limits:\n" + (c.effective.empty()
                                              ? "  (none: writes are not limited here or above)\n"
                                              : section(kEffective));
  out += "\nPage cache: " + t.cell(0, 7).human() + " dirty, " + t.cell(0, 8).human() +
         " under writeback\n";
  return out;
}

Json boostsJson(const std::vector<dbus::BoostView>& list) {
  return Json(boostTable(list).json());
}

std::string boostsText(const std::vector<dbus::BoostView>& list, const RenderStyle& st) {
  std::string out =
      list.empty() && st.legend ? std::string() : boostTable(list).render(st.legend, st.color);
  if (st.legend)
    out += (list.empty() ? "" : "\n") + footer(list.size(), "boost", "boosts", "active.");
  return out;
}

Json syncersJson(const std::vector<dbus::SyncerView>& list) {
  return Json(syncerTable(list).json());
}

std::string syncersText(const std::vector<dbus::SyncerView>& list, const RenderStyle& st) {
  std::string out =
      list.empty() && st.legend ? std::string() : syncerTable(list).render(st.legend, st.color);
  if (st.legend) {
    out += (list.empty() ? "" : "\n") + footer(list.size(), "syncer", "syncers", "in a sync call.");
  }
  return out;
}

Json eventJson(const dbus::EventView& e) {
  return Json(eventTable(e).rowJson(0));
}

std::string eventText(const dbus::EventView& e) {
  return eventTable(e).renderInline(0);
}

Result<Json> metricsJson(const std::string& text) {
  Table samples({{"name", ""}, {"labels", ""}, {"value", ""}});
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
    Table labels({{"key", ""}, {"value", ""}});
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
        labels.addRow({Cell::text(key), Cell::text(value)});
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
    samples.addRow(
        {Cell::text(name), Cell::nested(std::move(labels), Cell::Nest::Keyed), Cell::real(v)});
  }
  return Json(samples.json());
}

}  // namespace cxiosync::ctl
