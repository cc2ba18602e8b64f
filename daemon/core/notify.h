// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// systemd integration for a Type=notify service (sd_notify(3)): READY=1 after recovery,
// STATUS=, WATCHDOG=1, RELOADING=1 around reloads, STOPPING=1. All calls are no-ops when
// NOTIFY_SOCKET is unset (started by hand).
#include <chrono>
#include <optional>
#include <string>

namespace cxiosync {

class Notifier {
 public:
  Notifier();

  // True when NOTIFY_SOCKET is set.
  bool enabled() const { return enabled_; }

  void ready(const std::string& status);
  void status(const std::string& status);
  // RELOADING=1 with MONOTONIC_USEC= (required by Type=notify-reload on systemd >= 253,
  // ignored by older ones).
  void reloading(const std::string& status);
  void stopping(const std::string& status);
  void watchdog();

  // The interval at which WATCHDOG=1 must be sent: half of WatchdogSec= (sd_watchdog_enabled),
  // nullopt when the service manager does not watch us.
  std::optional<std::chrono::microseconds> watchdogPingInterval() const;

  size_t sent() const { return sent_; }

 private:
  void send(const std::string& text);
  bool enabled_ = false;
  size_t sent_ = 0;
};

// Is the system going down (so that a daemon stop should lift limits, not restore them)?
//
// Decision: ask PID 1 for Manager.SystemState over its private socket
// (/run/systemd/private, as systemctl does for root; it works while dbus.service is already
// stopped late in shutdown), falling back to the system bus; "stopping" means a job for
// shutdown.target is queued or running. Both calls time out after 1 s. No subprocess.
//
// Override for tests and for systems without systemd: environment variable
// CXIOSYNC_ASSUME_SHUTDOWN=1 (yes) / =0 (no), or the daemon flag --assume-shutdown=yes|no.
enum class ShutdownOverride { None, Yes, No };
bool systemShuttingDown(ShutdownOverride override = ShutdownOverride::None);

}  // namespace cxiosync
