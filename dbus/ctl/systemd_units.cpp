// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/systemd_units.h"

#include <unistd.h>

#include <chrono>

#include <sdbus-c++/sdbus-c++.h>

#include "dbus/sdbus_compat.h"

namespace cxiosync::ctl {

namespace {

constexpr const char* kSystemd = "org.freedesktop.systemd1";
constexpr const char* kManagerPath = "/org/freedesktop/systemd1";
constexpr const char* kManagerInterface = "org.freedesktop.systemd1.Manager";
constexpr const char* kUnitInterface = "org.freedesktop.systemd1.Unit";
constexpr auto kTimeout = std::chrono::seconds(10);

// Errors that mean "nobody is there to ask" (fall back), not "systemd said no".
bool unreachableError(const std::string& name) {
  return name == "org.freedesktop.DBus.Error.ServiceUnknown" ||
         name == "org.freedesktop.DBus.Error.NameHasNoOwner" ||
         name.rfind("org.freedesktop.DBus.Error.Spawn.", 0) == 0 ||
         name == "org.freedesktop.DBus.Error.NoReply" ||
         name == "org.freedesktop.DBus.Error.Disconnected" ||
         name == "org.freedesktop.DBus.Error.NoServer";
}

UnitAnswer fromError(const sdbus::Error& e) {
  UnitAnswer a;
  a.kind =
      unreachableError(e.getName()) ? UnitAnswer::Kind::Unreachable : UnitAnswer::Kind::Refused;
  a.reason = e.getMessage() + " (" + e.getName() + ")";
  return a;
}

// "foo.service" → "org.freedesktop.systemd1.Service" (likewise .Scope, .Slice, .Socket, ...).
std::string typeInterface(const std::string& unit) {
  auto dot = unit.rfind('.');
  std::string type = dot == std::string::npos ? "" : unit.substr(dot + 1);
  if (type.empty() || type[0] < 'a' || type[0] > 'z') return kUnitInterface;
  type[0] = static_cast<char>(type[0] - 'a' + 'A');
  return "org.freedesktop.systemd1." + type;
}

class SystemdUnits final : public UnitLookup {
 public:
  SystemdUnits(dbus::BusTarget bus, bool checkBooted)
      : bus_(std::move(bus)), checkBooted_(checkBooted) {}

  UnitAnswer lookup(const std::string& unit) override {
    if (checkBooted_ && ::access("/run/systemd/system/", F_OK) != 0) {
      UnitAnswer a;
      a.reason = "not booted with systemd";
      return a;
    }
    std::unique_ptr<sdbus::IConnection> conn;
    try {
      conn = connect();
    } catch (const sdbus::Error& e) {
      UnitAnswer a;
      a.reason = "cannot connect to the " + bus_.describe() + " bus: " + e.getMessage();
      return a;
    }
    try {
      auto manager = dbus::compat::createProxy(*conn, kSystemd, kManagerPath);
      sdbus::ObjectPath path;
      try {
        manager->callMethod("GetUnit")
            .onInterface(kManagerInterface)
            .withArguments(unit)
            .withTimeout(kTimeout)
            .storeResultsTo(path);
      } catch (const sdbus::Error& e) {
        if (e.getName() != "org.freedesktop.systemd1.NoSuchUnit") throw;
        // Not loaded: not active. Load it to say whether it exists (and where it would run).
        manager->callMethod("LoadUnit")
            .onInterface(kManagerInterface)
            .withArguments(unit)
            .withTimeout(kTimeout)
            .storeResultsTo(path);
      }
      auto proxy = dbus::compat::createProxy(*conn, kSystemd, path);
      UnitAnswer a;
      a.kind = UnitAnswer::Kind::Reached;
      a.loadState = property(*proxy, kUnitInterface, "LoadState");
      a.activeState = property(*proxy, kUnitInterface, "ActiveState");
      if (a.loadState != "not-found") {
        const std::string iface = typeInterface(unit);
        a.controlGroup = property(*proxy, iface, "ControlGroup");
        a.slice = property(*proxy, iface, "Slice");
      }
      return a;
    } catch (const sdbus::Error& e) {
      return fromError(e);
    }
  }

 private:
  std::unique_ptr<sdbus::IConnection> connect() const {
    switch (bus_.kind) {
      case dbus::BusTarget::Kind::System:
        return sdbus::createSystemBusConnection();
      case dbus::BusTarget::Kind::Session:
        return sdbus::createSessionBusConnection();
      case dbus::BusTarget::Kind::Address:
        break;
    }
    return sdbus::createSessionBusConnectionWithAddress(bus_.address);
  }

  static std::string property(sdbus::IProxy& proxy, const std::string& iface,
                              const std::string& name) {
    sdbus::Variant v;
    proxy.callMethod("Get")
        .onInterface("org.freedesktop.DBus.Properties")
        .withArguments(iface, name)
        .withTimeout(kTimeout)
        .storeResultsTo(v);
    return v.get<std::string>();
  }

  dbus::BusTarget bus_;
  bool checkBooted_;
};

}  // namespace

std::unique_ptr<UnitLookup> systemdUnitLookup(const dbus::BusTarget& bus, bool checkBooted) {
  return std::make_unique<SystemdUnits>(bus, checkBooted);
}

}  // namespace cxiosync::ctl
