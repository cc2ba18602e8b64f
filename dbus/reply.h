// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Sending a method's reply: every Manager and Loop method is asynchronous on the server side
// (org.cxiosync1.xml: Method.Async "server"), so every reply leaves through these two
// functions, and they make sure one does:
//   - error messages are daemon bytes (they quote cgroup names, kernel text, the caller's
//     input): they go out as text through wire::text, the one reversible \xNN escape;
//   - a reply that sd-bus still cannot build (a result string that is not UTF-8, a message
//     cut inside a character by a careless caller) is replaced by org.cxiosync1.Error.Failed
//     "reply could not be encoded", and the reason is logged. Never dropped: sd-bus drops an
//     error reply it cannot build, and the caller waited for its 25 s timeout (issue 16).
//     With sdbus-c++'s synchronous handlers the library built the reply out of our reach;
//   - a caller that has gone, or a broken connection: nothing is left to tell anyone (the
//     connection's loss is seen by BusServer::process).
#include <functional>
#include <string>
#include <type_traits>

#include <sdbus-c++/sdbus-c++.h>

#include "dbus/bus_server.h"
#include "dbus/sdbus_compat.h"
#include "dbus/wire.h"

namespace cxiosync::dbus::reply {

inline constexpr const char* kFailed = "org.cxiosync1.Error.Failed";
inline constexpr const char* kNotEncodable = "reply could not be encoded";

using LogFn = std::function<void(BusLogLevel, const std::string&)>;

inline void logSafely(const LogFn& log, const std::string& message) {
  if (!log) return;
  try {
    log(BusLogLevel::Warning, message);
  } catch (...) {
  }
}

// The generic error, after `why` (the sd-bus error that stopped the real reply) was logged.
template <class... R>
void replaceByFailed(const sdbus::Result<R...>& result, const char* method, const sdbus::Error& why,
                     const LogFn& log) {
  logSafely(log, std::string(method) + ": reply could not be encoded (" + why.getMessage() +
                     "); sent " + kFailed + " instead");
  try {
    result.returnError(compat::error(kFailed, kNotEncodable));
  } catch (...) {
  }
}

template <class... R>
void error(const sdbus::Result<R...>& result, const char* method, const sdbus::Error& e,
           const LogFn& log) {
  try {
    result.returnError(compat::error(e.getName(), wire::text(e.getMessage())));
    return;
  } catch (const sdbus::Error& failure) {
    replaceByFailed(result, method, failure, log);
  } catch (...) {
  }
}

template <class... R>
void results(const sdbus::Result<R...>& result, const char* method, const LogFn& log,
             const std::type_identity_t<R>&... values) {
  try {
    result.returnResults(values...);
    return;
  } catch (const sdbus::Error& failure) {
    replaceByFailed(result, method, failure, log);
  } catch (...) {
  }
}

}  // namespace cxiosync::dbus::reply
