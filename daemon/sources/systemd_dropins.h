// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Asks systemd (PID 1) which unit owns a cgroup and which drop-in files it applies, in its own
// order, and hears when it reloads: the UnitDropInFinder used where systemd runs.
//
//   GetUnitByControlGroup(cgroup) -> unit object; it must be the unit that names exactly this
//   cgroup (systemd answers with the closest owner for a cgroup inside a unit, e.g. a delegated
//   container subtree: that one has no unit of its own); then its DropInPaths. Two round trips
//   per cgroup, only for cgroups the daemon has not seen before.
//   Signal Manager.Reloading(false): a daemon-reload (or daemon-reexec) finished; DropInPaths
//   may have changed.
//
// Connection: PID 1's private socket /run/systemd/private (root only; no dbus-daemon in the way
// during early boot or when the bus is wedged; PID 1 sends its signals to every private
// connection unconditionally), else the system bus with Manager.Subscribe(). The calls are
// synchronous with a short timeout: PID 1 answers in microseconds unless it is reloading, and
// they happen only for cgroups the daemon has not seen before.
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "daemon/sources/unit_dropins.h"

namespace cxiosync {

// D-Bus object path of a unit: "/org/freedesktop/systemd1/unit/backup_2eslice".
std::string unitObjectPath(std::string_view unit);

class SystemdDropInFinder final : public UnitDropInFinder {
 public:
  // Fails when systemd is not PID 1 or answers on neither connection.
  static Result<std::unique_ptr<SystemdDropInFinder>> connect();
  ~SystemdDropInFinder() override;
  SystemdDropInFinder(const SystemdDropInFinder&) = delete;
  SystemdDropInFinder& operator=(const SystemdDropInFinder&) = delete;

  std::string_view name() const override { return "systemd"; }
  Result<std::optional<UnitDropInList>> find(const CgroupPath& cgroup) override;

  // "private socket" or "system bus".
  const std::string& via() const { return via_; }

  // Event loop integration (see event_loop.h): watch fd() for pollEvents() (poll(2) bits) with
  // timeout(), then call process().
  int fd() const;
  uint32_t pollEvents() const;
  std::optional<std::chrono::microseconds> timeout() const;

  struct Processed {
    int reloads = 0;            // Reloading(false) signals seen
    bool disconnected = false;  // PID 1 closed the connection (daemon-reexec): reconnect()
  };
  // Dispatches what arrived; reloads are reported once, a disconnect until reconnect().
  Processed process();
  // process() has something to report without the fd becoming readable (find() dispatched).
  bool pending() const { return reloads_ > 0 || disconnected_; }
  // After `disconnected`: opens a new connection (fd() changes). Error if PID 1 does not answer.
  Status reconnect();

 private:
  SystemdDropInFinder() = default;
  Status open();
  void close();
  void dispatch();  // sd_bus_process until idle: counts Reloading, notices a disconnect
  Result<std::string> unitObjectOf(const CgroupPath& cgroup, const std::string& unitName);

  sd_bus* bus_ = nullptr;
  static int onReloading(sd_bus_message* m, void* userdata, sd_bus_error* error);

  sd_bus_slot* match_ = nullptr;
  std::string via_;
  int reloads_ = 0;
  bool reloading_ = false;  // between Reloading(true) and Reloading(false)
  bool disconnected_ = false;
};

}  // namespace cxiosync
