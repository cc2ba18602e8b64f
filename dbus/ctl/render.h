// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// What cxiosyncctl prints for each verb, text and JSON, as pure functions of the views.
// JSON conventions: snake_case keys in IDL order, limits as numbers with null for "max",
// times as *_usec numbers (plus *_text only in human output). Stable: tests pin the keys.
#include <string>
#include <utility>
#include <vector>

#include "dbus/ctl/json.h"
#include "dbus/views.h"
#include "policy/output/table.h"
#include "policy/result.h"

namespace cxiosync::ctl {

struct RenderStyle {
  bool legend = true;            // headers and footers (--no-legend clears)
  bool color = false;            // ANSI colour (terminal only)
  uint64_t nowRealtimeUsec = 0;  // for "5min ago" (0: omit)
};

// A one-row table's JSON: the small answers of the changing verbs ({"reloaded": true}).
Json recordJson(std::vector<std::pair<std::string, output::Cell>> fields);

Json statusJson(const dbus::StatusView& s);
std::string statusText(const dbus::StatusView& s, const RenderStyle& st);

Json cgroupJson(const dbus::CgroupView& c);
Json cgroupsJson(const std::vector<dbus::CgroupView>& list);
std::string cgroupsText(const std::vector<dbus::CgroupView>& list, const RenderStyle& st);
std::string cgroupText(const dbus::CgroupView& c, const RenderStyle& st);

Json boostsJson(const std::vector<dbus::BoostView>& list);
std::string boostsText(const std::vector<dbus::BoostView>& list, const RenderStyle& st);

Json syncersJson(const std::vector<dbus::SyncerView>& list);
std::string syncersText(const std::vector<dbus::SyncerView>& list, const RenderStyle& st);

Json eventJson(const dbus::EventView& e);
std::string eventText(const dbus::EventView& e);

// Prometheus text exposition → [{"name","labels":{...},"value"}]. Comments (# HELP/# TYPE)
// skipped. An unparsable line is an error: --json then fails instead of printing text.
Result<Json> metricsJson(const std::string& text);

}  // namespace cxiosync::ctl
