// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/systemd_units.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include <sdbus-c++/sdbus-c++.h>
#include <systemd/sd-bus.h>

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

// A user manager, over its private socket ($XDG_RUNTIME_DIR/systemd/private), as
// `systemctl --user` talks to it: peer to peer, no user bus needed (dbus-user-session is
// optional), and root may connect to any user's manager. sdbus-c++ 1.2 cannot open a
// peer-to-peer connection (every address gets a Hello), hence sd-bus here.
class UserManagerUnits final : public UnitLookup {
 public:
  explicit UserManagerUnits(uint32_t uid) : uid_(uid) {}
  ~UserManagerUnits() override { sd_bus_flush_close_unref(bus_); }

  UnitAnswer lookup(const std::string& unit) override {
    UnitAnswer a;
    if (int r = connect(); r < 0) {
      a.reason = "cannot connect to " + socket_ + ": " + std::strerror(-r);
      return a;
    }
    std::string path;
    if (!call("GetUnit", unit, path)) {
      if (error_ != "org.freedesktop.systemd1.NoSuchUnit" || !call("LoadUnit", unit, path))
        return refused();
    }
    a.kind = UnitAnswer::Kind::Reached;
    if (!property(path, kUnitInterface, "LoadState", a.loadState) ||
        !property(path, kUnitInterface, "ActiveState", a.activeState)) {
      return refused();
    }
    if (a.loadState != "not-found") {
      const std::string iface = typeInterface(unit);
      if (!property(path, iface, "ControlGroup", a.controlGroup) ||
          !property(path, iface, "Slice", a.slice)) {
        return refused();
      }
    }
    return a;
  }

 private:
  int connect() {
    if (bus_) return 0;
    const char* xdg = ::getenv("XDG_RUNTIME_DIR");
    std::string dir = xdg && uid_ == ::getuid() ? xdg : "/run/user/" + std::to_string(uid_);
    socket_ = dir + "/systemd/private";
    int r = sd_bus_new(&bus_);
    if (r >= 0) r = sd_bus_set_address(bus_, ("unix:path=" + socket_).c_str());
    if (r >= 0) r = sd_bus_start(bus_);
    if (r < 0) bus_ = sd_bus_flush_close_unref(bus_);
    return r;
  }

  // GetUnit/LoadUnit (s) → o.
  bool call(const char* method, const std::string& unit, std::string& path) {
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message* reply = nullptr;
    const char* p = nullptr;
    int r = sd_bus_call_method(bus_, kSystemd, kManagerPath, kManagerInterface, method, &e, &reply,
                               "s", unit.c_str());
    if (r >= 0) r = sd_bus_message_read(reply, "o", &p);
    if (r >= 0 && p) path = p;
    remember(e, r);
    sd_bus_message_unref(reply);
    return r >= 0;
  }

  bool property(const std::string& path, const std::string& iface, const char* name,
                std::string& out) {
    sd_bus_error e = SD_BUS_ERROR_NULL;
    char* v = nullptr;
    int r = sd_bus_get_property_string(bus_, kSystemd, path.c_str(), iface.c_str(), name, &e, &v);
    if (r >= 0 && v) out = v;
    std::free(v);
    remember(e, r);
    return r >= 0;
  }

  void remember(sd_bus_error& e, int r) {
    error_ = sd_bus_error_is_set(&e) ? e.name : "";
    message_ = sd_bus_error_is_set(&e) && e.message ? e.message : (r < 0 ? std::strerror(-r) : "");
    sd_bus_error_free(&e);
  }

  UnitAnswer refused() const {
    UnitAnswer a;
    a.kind = unreachableError(error_) ? UnitAnswer::Kind::Unreachable : UnitAnswer::Kind::Refused;
    a.reason = message_ + (error_.empty() ? "" : " (" + error_ + ")");
    return a;
  }

  uint32_t uid_;
  std::string socket_;
  sd_bus* bus_ = nullptr;
  std::string error_, message_;
};

}  // namespace

std::unique_ptr<UnitLookup> userManagerLookup(uint32_t uid) {
  return std::make_unique<UserManagerUnits>(uid);
}

std::unique_ptr<UnitLookup> systemdUnitLookup(const dbus::BusTarget& bus, bool checkBooted) {
  return std::make_unique<SystemdUnits>(bus, checkBooted);
}

}  // namespace cxiosync::ctl
