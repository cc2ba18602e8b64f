#include "daemon/systemd_units.h"

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "policy/config/dropin.h"

namespace cxiosync {
namespace {

constexpr const char* kDestination = "org.freedesktop.systemd1";
constexpr const char* kManagerPath = "/org/freedesktop/systemd1";
constexpr const char* kManagerInterface = "org.freedesktop.systemd1.Manager";
constexpr const char* kUnitInterface = "org.freedesktop.systemd1.Unit";
constexpr const char* kPrivateSocket = "unix:path=/run/systemd/private";
// PID 1 answers in microseconds; it does not answer at all while it reloads (seconds on a big
// system). Long enough for that, short enough not to stall boosting for long.
constexpr uint64_t kCallTimeoutUsec = 2'000'000;

struct BusError {
  sd_bus_error e = SD_BUS_ERROR_NULL;
  ~BusError() { sd_bus_error_free(&e); }
  std::string text(int r) const {
    if (sd_bus_error_is_set(&e)) return std::string(e.name) + ": " + (e.message ? e.message : "");
    return std::strerror(-r);
  }
};

int onReloading(sd_bus_message* m, void* userdata, sd_bus_error*) {
  int active = 0;
  if (sd_bus_message_read(m, "b", &active) >= 0 && !active) ++*static_cast<int*>(userdata);
  return 0;
}

}  // namespace

Result<std::unique_ptr<SystemdUnits>> SystemdUnits::connect() {
  if (sd_booted() <= 0) return makeError("the system was not booted with systemd", ENOMEDIUM);
  std::unique_ptr<SystemdUnits> u(new SystemdUnits());
  if (auto st = u->open(); !st) return st.error();
  return u;
}

SystemdUnits::~SystemdUnits() {
  close();
}

void SystemdUnits::close() {
  match_ = sd_bus_slot_unref(match_);
  if (bus_) bus_ = sd_bus_flush_close_unref(bus_);
}

Status SystemdUnits::open() {
  close();
  std::string errors;
  // The private socket first: PID 1 itself, no broker.
  if (sd_bus_new(&bus_) >= 0) {
    int r = sd_bus_set_address(bus_, kPrivateSocket);
    if (r >= 0) r = sd_bus_start(bus_);
    if (r >= 0) {
      via_ = "private socket";
    } else {
      errors = std::string("private socket: ") + std::strerror(-r);
      bus_ = sd_bus_flush_close_unref(bus_);
    }
  }
  if (!bus_) {
    int r = sd_bus_open_system(&bus_);
    if (r < 0) {
      bus_ = nullptr;
      return makeError(errors + "; system bus: " + std::strerror(-r), -r);
    }
    via_ = "system bus";
  }
  (void)sd_bus_set_method_call_timeout(bus_, kCallTimeoutUsec);
  // On the bus, the sender is PID 1's well-known name; on the private socket there is none.
  const char* sender = via_ == "system bus" ? kDestination : nullptr;
  int r = sd_bus_match_signal(bus_, &match_, sender, kManagerPath, kManagerInterface, "Reloading",
                              onReloading, &reloads_);
  if (r < 0) {
    close();
    return makeError(std::string("cannot watch systemd's Reloading signal: ") + std::strerror(-r),
                     -r);
  }
  if (via_ == "system bus") {
    // PID 1 emits signals on the bus only while somebody is subscribed.
    BusError err;
    r = sd_bus_call_method(bus_, kDestination, kManagerPath, kManagerInterface, "Subscribe", &err.e,
                           nullptr, "");
    if (r < 0) {
      std::string msg = "systemd does not answer on the system bus: " + err.text(r);
      close();
      return makeError(msg, -r);
    }
  }
  return Ok{};
}

Status SystemdUnits::reconnect() {
  return open();
}

int SystemdUnits::fd() const {
  return bus_ ? sd_bus_get_fd(bus_) : -1;
}

uint32_t SystemdUnits::pollEvents() const {
  int e = bus_ ? sd_bus_get_events(bus_) : 0;
  return e < 0 ? 0 : static_cast<uint32_t>(e);
}

std::optional<std::chrono::microseconds> SystemdUnits::timeout() const {
  uint64_t at = 0;
  if (!bus_ || sd_bus_get_timeout(bus_, &at) < 0 || at == UINT64_MAX) return std::nullopt;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t now =
      static_cast<uint64_t>(ts.tv_sec) * 1'000'000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
  return std::chrono::microseconds(at > now ? at - now : 0);
}

SystemdUnits::Processed SystemdUnits::process() {
  Processed p;
  if (!bus_) {
    p.disconnected = true;
    return p;
  }
  for (;;) {
    int r = sd_bus_process(bus_, nullptr);
    if (r < 0) {
      p.disconnected = true;
      close();
      break;
    }
    if (r == 0) break;
  }
  p.reloads = reloads_;
  reloads_ = 0;
  return p;
}

Result<std::string> SystemdUnits::unitObjectOf(const CgroupPath& cgroup,
                                               const std::string& unitName) {
  BusError err;
  sd_bus_message* reply = nullptr;
  // The root slice owns "/", which systemd's cgroup lookup does not take: ask by name.
  int r = cgroup.isRoot() ? sd_bus_call_method(bus_, kDestination, kManagerPath, kManagerInterface,
                                               "GetUnit", &err.e, &reply, "s", unitName.c_str())
                          : sd_bus_call_method(bus_, kDestination, kManagerPath, kManagerInterface,
                                               "GetUnitByControlGroup", &err.e, &reply, "s",
                                               cgroup.display().c_str());
  if (r < 0) {
    std::string msg = err.text(r);
    if (sd_bus_error_has_name(&err.e, "org.freedesktop.systemd1.NoUnitForControlGroup") ||
        sd_bus_error_has_name(&err.e, "org.freedesktop.systemd1.NoSuchUnit"))
      return makeError(msg, ENOENT);
    return makeError(msg, -r);
  }
  const char* path = nullptr;
  r = sd_bus_message_read(reply, "o", &path);
  std::string out = r >= 0 && path ? path : "";
  sd_bus_message_unref(reply);
  if (out.empty()) return makeError("malformed reply from systemd", EBADMSG);
  return out;
}

Result<std::optional<UnitDropInList>> SystemdUnits::find(const CgroupPath& cgroup) {
  // Only cgroups laid out as a unit's own can belong to one; no call for the others (delegated
  // subtrees hold thousands of container cgroups).
  std::string expected = unitForCgroupPath(cgroup);
  if (expected.empty()) return std::optional<UnitDropInList>{};
  if (!bus_) return makeError("not connected to systemd", ENOTCONN);
  auto object = unitObjectOf(cgroup, expected);
  if (!object) {
    if (object.error().code == ENOENT) return std::optional<UnitDropInList>{};
    return object.error();
  }
  BusError err;
  char* id = nullptr;
  int r = sd_bus_get_property_string(bus_, kDestination, object->c_str(), kUnitInterface, "Id",
                                     &err.e, &id);
  if (r < 0) return makeError("Id of " + *object + ": " + err.text(r), -r);
  std::string unit = id ? id : "";
  free(id);
  // systemd names the closest owner of a cgroup inside a unit: not this cgroup's own unit.
  if (unit != expected) return std::optional<UnitDropInList>{};
  char** paths = nullptr;
  BusError err2;
  r = sd_bus_get_property_strv(bus_, kDestination, object->c_str(), kUnitInterface, "DropInPaths",
                               &err2.e, &paths);
  if (r < 0) return makeError("DropInPaths of " + unit + ": " + err2.text(r), -r);
  UnitDropInList list{unit, {}};
  for (char** p = paths; p && *p; ++p) {
    list.files.emplace_back(*p);
    free(*p);
  }
  free(paths);
  return std::optional<UnitDropInList>{std::move(list)};
}

}  // namespace cxiosync
