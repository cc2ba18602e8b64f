#pragma once
// Asks systemd (PID 1) which unit owns a cgroup and which drop-in files it applies, in its own
// order, and hears when it reloads: the UnitDropInFinder used where systemd runs.
//
//   GetUnitByControlGroup(cgroup) -> unit object; its Id must be the unit that names exactly
//   this cgroup (systemd answers with the closest owner for a cgroup inside a unit, e.g. a
//   delegated container subtree: that one has no unit of its own); then DropInPaths.
//   Signal Manager.Reloading(false): a daemon-reload (or daemon-reexec) finished; DropInPaths
//   may have changed.
//
// Connection: PID 1's private socket /run/systemd/private (root only; no dbus-daemon in the way
// during early boot or when the bus is wedged; PID 1 sends its signals to every private
// connection unconditionally), else the system bus with Manager.Subscribe(). The calls are
// synchronous with a short timeout: PID 1 answers in microseconds unless it is reloading, and
// they happen only for cgroups the daemon has not seen before.
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "daemon/unit_dropins.h"

typedef struct sd_bus sd_bus;
typedef struct sd_bus_slot sd_bus_slot;

namespace cxiosync {

class SystemdUnits final : public UnitDropInFinder {
 public:
  // Fails when systemd is not PID 1 or answers on neither connection.
  static Result<std::unique_ptr<SystemdUnits>> connect();
  ~SystemdUnits() override;
  SystemdUnits(const SystemdUnits&) = delete;
  SystemdUnits& operator=(const SystemdUnits&) = delete;

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
  Processed process();
  // After `disconnected`: opens a new connection (fd() changes). Error if PID 1 does not answer.
  Status reconnect();

 private:
  SystemdUnits() = default;
  Status open();
  void close();
  Result<std::string> unitObjectOf(const CgroupPath& cgroup, const std::string& unitName);

  sd_bus* bus_ = nullptr;
  sd_bus_slot* match_ = nullptr;
  std::string via_;
  int reloads_ = 0;
};

}  // namespace cxiosync
