// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sources/systemd_dropins.h"

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

}  // namespace

int SystemdDropInFinder::onReloading(sd_bus_message* m, void* userdata, sd_bus_error*) {
  auto* self = static_cast<SystemdDropInFinder*>(userdata);
  int active = 0;
  if (sd_bus_message_read(m, "b", &active) < 0) return 0;
  self->reloading_ = active != 0;
  if (!active) ++self->reloads_;
  return 0;
}

Result<std::unique_ptr<SystemdDropInFinder>> SystemdDropInFinder::connect() {
  if (sd_booted() <= 0) return makeError("the system was not booted with systemd", ENOMEDIUM);
  std::unique_ptr<SystemdDropInFinder> u(new SystemdDropInFinder());
  if (auto st = u->open(); !st) return st.error();
  return u;
}

SystemdDropInFinder::~SystemdDropInFinder() {
  close();
}

void SystemdDropInFinder::close() {
  match_ = sd_bus_slot_unref(match_);
  if (bus_) bus_ = sd_bus_flush_close_unref(bus_);
  reloading_ = disconnected_ = false;
}

Status SystemdDropInFinder::open() {
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
                              onReloading, this);
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

Status SystemdDropInFinder::reconnect() {
  return open();
}

int SystemdDropInFinder::fd() const {
  return bus_ ? sd_bus_get_fd(bus_) : -1;
}

uint32_t SystemdDropInFinder::pollEvents() const {
  int e = bus_ ? sd_bus_get_events(bus_) : 0;
  return e < 0 ? 0 : static_cast<uint32_t>(e);
}

std::optional<std::chrono::microseconds> SystemdDropInFinder::timeout() const {
  uint64_t at = 0;
  if (!bus_ || sd_bus_get_timeout(bus_, &at) < 0 || at == UINT64_MAX) return std::nullopt;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t now =
      static_cast<uint64_t>(ts.tv_sec) * 1'000'000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
  return std::chrono::microseconds(at > now ? at - now : 0);
}

void SystemdDropInFinder::dispatch() {
  while (bus_ && !disconnected_) {
    int r = sd_bus_process(bus_, nullptr);
    if (r < 0) disconnected_ = true;  // closed by reconnect(), after the loop let go of fd()
    if (r <= 0) break;
  }
}

SystemdDropInFinder::Processed SystemdDropInFinder::process() {
  dispatch();
  Processed p{reloads_, disconnected_ || !bus_};
  reloads_ = 0;
  return p;
}

Result<std::string> SystemdDropInFinder::unitObjectOf(const CgroupPath& cgroup,
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

std::string unitObjectPath(std::string_view unit) {
  // systemd's bus_label_escape(): [A-Za-z0-9] kept, any other byte as _xx (lower-case hex).
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "/org/freedesktop/systemd1/unit/";
  if (unit.empty()) return out + "_";
  for (unsigned char c : unit) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out += static_cast<char>(c);
    } else {
      out += '_';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<std::optional<UnitDropInList>> SystemdDropInFinder::find(const CgroupPath& cgroup) {
  // Only cgroups laid out as a unit's own can belong to one; no call for the others (delegated
  // subtrees hold thousands of container cgroups).
  std::string expected = unitForCgroupPath(cgroup);
  if (expected.empty()) return std::optional<UnitDropInList>{};
  // PID 1 answers nothing while it reloads: do not wait for the call timeout. Signals already
  // received but not yet dispatched count (a refresh may run before the loop reads the bus).
  dispatch();
  if (!bus_ || disconnected_) return makeError("not connected to systemd", ENOTCONN);
  if (reloading_) return makeError("systemd is reloading", EAGAIN);
  auto object = unitObjectOf(cgroup, expected);
  if (!object) {
    if (object.error().code == ENOENT) return std::optional<UnitDropInList>{};
    return object.error();
  }
  // systemd names the closest owner of a cgroup inside a unit: not this cgroup's own unit. Its
  // object path says which unit it is (one round trip less than asking for its Id).
  if (*object != unitObjectPath(expected)) return std::optional<UnitDropInList>{};
  BusError err;
  char** paths = nullptr;
  int r = sd_bus_get_property_strv(bus_, kDestination, object->c_str(), kUnitInterface,
                                   "DropInPaths", &err.e, &paths);
  if (r < 0) return makeError("DropInPaths of " + expected + ": " + err.text(r), -r);
  UnitDropInList list{expected, {}};
  for (char** p = paths; p && *p; ++p) {
    list.files.emplace_back(*p);
    free(*p);
  }
  free(paths);
  return std::optional<UnitDropInList>{std::move(list)};
}

}  // namespace cxiosync
