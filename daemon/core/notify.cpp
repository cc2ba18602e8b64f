// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/core/notify.h"

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace cxiosync {

Notifier::Notifier() {
  const char* s = std::getenv("NOTIFY_SOCKET");
  enabled_ = s != nullptr && *s != '\0';
}

void Notifier::send(const std::string& text) {
  if (!enabled_) return;
  // unset_environment=0: a restarted child (there is none) or a later call may still need it.
  if (sd_notify(0, text.c_str()) > 0) ++sent_;
}

namespace {
std::string oneLine(std::string s) {
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}
}  // namespace

void Notifier::ready(const std::string& status) {
  send("READY=1\nSTATUS=" + oneLine(status));
}

void Notifier::status(const std::string& status) {
  send("STATUS=" + oneLine(status));
}

void Notifier::reloading(const std::string& status) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t usec =
      static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
  send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\nSTATUS=" + oneLine(status));
}

void Notifier::stopping(const std::string& status) {
  send("STOPPING=1\nSTATUS=" + oneLine(status));
}

void Notifier::watchdog() {
  send("WATCHDOG=1");
}

std::optional<std::chrono::microseconds> Notifier::watchdogPingInterval() const {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::microseconds(usec / 2);
}

namespace {

// SystemState from PID 1 over `bus`; empty on any failure.
std::string querySystemState(sd_bus* bus) {
  char* state = nullptr;
  sd_bus_error err = SD_BUS_ERROR_NULL;
  (void)sd_bus_set_method_call_timeout(bus, 1000000);
  int r =
      sd_bus_get_property_string(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                 "org.freedesktop.systemd1.Manager", "SystemState", &err, &state);
  sd_bus_error_free(&err);
  std::string out;
  if (r >= 0 && state) out = state;
  free(state);
  return out;
}

std::string systemStateViaPrivateSocket() {
  sd_bus* bus = nullptr;
  if (sd_bus_new(&bus) < 0) return {};
  std::string out;
  if (sd_bus_set_address(bus, "unix:path=/run/systemd/private") >= 0 && sd_bus_start(bus) >= 0)
    out = querySystemState(bus);
  sd_bus_flush_close_unref(bus);
  return out;
}

std::string systemStateViaSystemBus() {
  sd_bus* bus = nullptr;
  if (sd_bus_open_system(&bus) < 0) return {};
  std::string out = querySystemState(bus);
  sd_bus_flush_close_unref(bus);
  return out;
}

}  // namespace

bool systemShuttingDown(ShutdownOverride override) {
  if (override == ShutdownOverride::Yes) return true;
  if (override == ShutdownOverride::No) return false;
  if (const char* env = std::getenv("CXIOSYNC_ASSUME_SHUTDOWN")) {
    std::string_view v(env);
    if (v == "1" || v == "yes" || v == "true") return true;
    if (v == "0" || v == "no" || v == "false") return false;
  }
  if (sd_booted() <= 0) return false;
  std::string state = systemStateViaPrivateSocket();
  if (state.empty()) state = systemStateViaSystemBus();
  return state == "stopping";
}

}  // namespace cxiosync
