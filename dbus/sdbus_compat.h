// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The one place that knows which sdbus-c++ API this tree is built against: 1.x (Debian 12:
// 1.2; Ubuntu 24.04: 1.4, which only adds API) or 2.x (Debian 13: 2.1). Everything else in
// dbus/, the daemon and the tests goes through these helpers and stays version-free.
//
// The library's headers carry no version macro, so CMake passes the major version of the
// package it found (sdbus-c++_VERSION_MAJOR) as CXIOSYNC_SDBUS_MAJOR; the header check below
// catches a build whose headers are not the ones CMake found.
//
// What 2.x changed that matters here (see docs in sdbus-c++'s "Migrating to 2.0"):
//   - names are strong types (Error::Name, ServiceName, ObjectPath, InterfaceName, ...);
//   - processPendingRequest() -> processPendingEvent(); PollData's absolute timeout_usec ->
//     chrono `timeout`, plus an eventFd that an external loop MUST also poll for POLLIN, or
//     replies queued by sd-bus while we were busy sit there until the bus fd wakes us;
//   - getCurrentlyProcessedMessage() returns a Message by value (sender may be null);
//   - Variant::peekValueType() returns const char* (a `!= "b"` compiles and compares
//     pointers);
//   - async reply callbacks get std::optional<Error> instead of const Error*;
//   - hand-written vtables: addVTable(registerMethod(...), ...).forInterface(iface) instead of
//     registerMethod(...).onInterface(iface) + finishRegistration(); proxies subscribe to
//     signals at once (no finishRegistration()).
#include <sdbus-c++/sdbus-c++.h>
#include <time.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef CXIOSYNC_SDBUS_MAJOR
#error "CXIOSYNC_SDBUS_MAJOR is not set: dbus/CMakeLists.txt passes sdbus-c++_VERSION_MAJOR"
#endif
#if (CXIOSYNC_SDBUS_MAJOR >= 2) != __has_include(<sdbus-c++/VTableItems.h>)
#error \
    "CXIOSYNC_SDBUS_MAJOR does not match the sdbus-c++ headers in use (VTableItems.h is 2.x only)"
#endif

namespace cxiosync::dbus::compat {

inline constexpr int kSdbusMajor = CXIOSYNC_SDBUS_MAJOR;

// What an async reply callback receives as its first argument (take it by value: sdbus-c++
// matches the callback's parameter types exactly); `if (err)` and `err->` work on both.
#if CXIOSYNC_SDBUS_MAJOR >= 2
using AsyncError = std::optional<sdbus::Error>;
#else
using AsyncError = const sdbus::Error*;
#endif

inline sdbus::Error error(const std::string& name, const std::string& message) {
#if CXIOSYNC_SDBUS_MAJOR >= 2
  return sdbus::Error(sdbus::Error::Name{name}, message);
#else
  return sdbus::Error(name, message);
#endif
}

inline std::unique_ptr<sdbus::IProxy> createProxy(sdbus::IConnection& conn,
                                                  const std::string& destination,
                                                  const std::string& path) {
#if CXIOSYNC_SDBUS_MAJOR >= 2
  return sdbus::createProxy(conn, sdbus::ServiceName{destination}, sdbus::ObjectPath{path});
#else
  return sdbus::createProxy(conn, destination, path);
#endif
}

inline std::unique_ptr<sdbus::IObject> createObject(sdbus::IConnection& conn,
                                                    const std::string& path) {
  return sdbus::createObject(conn, sdbus::ObjectPath{path});
}

inline void requestName(sdbus::IConnection& conn, const std::string& name) {
#if CXIOSYNC_SDBUS_MAJOR >= 2
  conn.requestName(sdbus::ServiceName{name});
#else
  conn.requestName(name);
#endif
}

// Processes one pending event; false when nothing was left to do.
inline bool processPending(sdbus::IConnection& conn) {
#if CXIOSYNC_SDBUS_MAJOR >= 2
  return conn.processPendingEvent();
#else
  return conn.processPendingRequest();
#endif
}

// Makes the uponSignal() subscriptions made so far on `proxy` take effect (2.x: at once).
inline void finishSubscriptions([[maybe_unused]] sdbus::IProxy& proxy) {
#if CXIOSYNC_SDBUS_MAJOR < 2
  proxy.finishRegistration();
#endif
}

// What an external event loop must watch for a connection, in one shape for both versions.
struct PollData {
  int fd = -1;       // the bus socket
  short events = 0;  // poll(2) bits for fd
  int eventFd = -1;  // 2.x: also watch for POLLIN; 1.x: none (-1)
  // Relative to the time of the call; nullopt: no deadline.
  std::optional<uint64_t> timeoutUsec;

  // For poll(2): -1 none, else rounded up to ms and clamped.
  int timeoutMs() const {
    if (!timeoutUsec) return -1;
    uint64_t ms = (*timeoutUsec + 999) / 1000;
    return ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms);
  }
};

inline PollData pollData(const sdbus::IConnection& conn) {
  auto pd = conn.getEventLoopPollData();
  PollData out;
  out.fd = pd.fd;
  out.events = pd.events;
#if CXIOSYNC_SDBUS_MAJOR >= 2
  out.eventFd = pd.eventFd;
  // Absolute CLOCK_MONOTONIC µs; max() (and, defensively, UINT64_MAX's wrap) means none.
  if (pd.timeout == std::chrono::microseconds::max() || pd.timeout.count() < 0) return out;
  uint64_t deadline = static_cast<uint64_t>(pd.timeout.count());
#else
  if (pd.timeout_usec == UINT64_MAX) return out;
  uint64_t deadline = pd.timeout_usec;
#endif
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = static_cast<uint64_t>(ts.tv_sec) * 1000000u + ts.tv_nsec / 1000;
  out.timeoutUsec = deadline <= now ? 0 : deadline - now;
  return out;
}

// The sender of the message being handled ("" when there is none, e.g. peer-to-peer).
inline std::string currentSender(const sdbus::IObject& object) {
  try {
#if CXIOSYNC_SDBUS_MAJOR >= 2
    auto msg = object.getCurrentlyProcessedMessage();
    const char* s = msg.getSender();
    return s ? std::string(s) : std::string();
#else
    const sdbus::Message* msg = object.getCurrentlyProcessedMessage();
    return msg ? msg->getSender() : std::string();
#endif
  } catch (...) {  // 1.x builds a std::string from a null sender
    return {};
  }
}

inline std::string typeString(const char* t) {  // 2.x
  return t ? std::string(t) : std::string();
}
inline std::string typeString(std::string t) {  // 1.x
  return t;
}

// The D-Bus signature of what `v` holds ("" when empty). Always a std::string: comparing
// 2.x's const char* with `!=` would compare pointers.
inline std::string typeOf(const sdbus::Variant& v) {
  return typeString(v.peekValueType());
}

inline void emitPropertiesChanged(sdbus::IObject& object, const std::string& interface,
                                  const std::vector<std::string>& names) {
#if CXIOSYNC_SDBUS_MAJOR >= 2
  std::vector<sdbus::PropertyName> props;
  props.reserve(names.size());
  for (const auto& n : names) props.emplace_back(n);
  object.emitPropertiesChangedSignal(sdbus::InterfaceName{interface}, props);
#else
  object.emitPropertiesChangedSignal(interface, names);
#endif
}

// Hand-written vtables (test fakes of systemd and polkit): collect, then finish() once.
class VTableBuilder {
 public:
  explicit VTableBuilder(sdbus::IObject& object) : object_(object) {}

  template <typename F>
  VTableBuilder& method(const std::string& interface, const std::string& name, F&& handler) {
#if CXIOSYNC_SDBUS_MAJOR >= 2
    items_[interface].push_back(
        sdbus::registerMethod(name).implementedAs(std::forward<F>(handler)));
#else
    object_.registerMethod(name).onInterface(interface).implementedAs(std::forward<F>(handler));
#endif
    return *this;
  }

  template <typename F>
  VTableBuilder& property(const std::string& interface, const std::string& name, F&& getter) {
#if CXIOSYNC_SDBUS_MAJOR >= 2
    items_[interface].push_back(sdbus::registerProperty(name).withGetter(std::forward<F>(getter)));
#else
    object_.registerProperty(name).onInterface(interface).withGetter(std::forward<F>(getter));
#endif
    return *this;
  }

  void finish() {
#if CXIOSYNC_SDBUS_MAJOR >= 2
    for (auto& [interface, items] : items_) {
      object_.addVTable(std::move(items)).forInterface(sdbus::InterfaceName{interface});
    }
    items_.clear();
#else
    object_.finishRegistration();
#endif
  }

 private:
  sdbus::IObject& object_;
#if CXIOSYNC_SDBUS_MAJOR >= 2
  std::map<std::string, std::vector<sdbus::VTableItem>> items_;
#endif
};

}  // namespace cxiosync::dbus::compat
