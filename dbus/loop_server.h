// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Internal to BusServer (dbus/bus_server.cpp): the org.cxiosync1.Loop objects and the loop
// methods of org.cxiosync1.Manager (LoopSetup, LoopList) over a LoopBackend.
//
// Objects: one per bound loop device seen, /org/cxiosync1/loop/loopN. Created after a
// LoopSetup and by refresh() (at startup and on every LoopList); removed after Detach, when
// a change left the device unbound, or when a call finds it gone. Removal is deferred to
// collect() (BusServer::process), never done inside the object's own callback. No udev
// monitor: a device set up or detached by someone else shows up (or goes) at the next
// LoopList, or when a call on its object finds it gone (NoSuchDevice).
//
// Property values are cached per object and re-read from the kernel when older than one
// second, so GetAll is one consistent read.
//
// Off the event loop (LoopJobFn, loop_backend.h): every backend call a method makes (the
// device lookup before authorization, the change itself, LoopSetup, LoopList) runs as a job;
// its completion, on the loop thread, sends the reply and changes the objects. A property
// read whose cache is stale starts a refresh job and answers from the cache meanwhile (with
// jobs; inline, it reads at once as before).
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

#include "dbus/authorizer.h"
#include "dbus/loop_backend.h"
#include "dbus/loop_wire.h"

namespace cxiosync::dbus {

enum class BusLogLevel;

inline constexpr const char* kLoopSetupAction = "org.cxiosync1.loop-setup";
inline constexpr const char* kLoopModifyOthersAction = "org.cxiosync1.loop-modify-others";
inline constexpr const char* kLoopDeleteOthersAction = "org.cxiosync1.loop-delete-others";

struct LoopAuthRequest {
  std::string sender;
  std::string what;  // "set up a loop device", "detach loop3"
  bool interactive = false;
  // The call pins the caller's fds while it waits (LoopSetup): a slot of its own, 4 per uid
  // and 16 in all (bus_server.cpp), beyond which it is Busy.
  bool holdsFds = false;
  // With the caller's uid: the polkit action needed ("" = none beyond the uid) or, when
  // `refusal` is set, a refusal without asking anyone.
  struct Decision {
    std::string action;
    std::string refusal;
  };
  std::function<Decision(uint32_t uid)> decide;
};
// Implemented by BusServer over its uid lookup and polkit path (the authorizer).
// Exactly one of allowed/refused is called, maybe later (async). Neither may throw.
using LoopAuthFn =
    std::function<void(LoopAuthRequest request, std::function<void(uint32_t uid)> allowed,
                       std::function<void(const Refusal& refusal)> refused)>;
using LoopLogFn = std::function<void(BusLogLevel, const std::string&)>;
// The bus driver's GetConnectionUnixProcessID for `sender`, asynchronously: `done(pid, "")`,
// or `done(0, why)`. Never throws. Needed where the nbd server starts in the caller's cgroup.
using LoopPidFn = std::function<void(
    const std::string& sender, std::function<void(uint32_t pid, const std::string& error)> done)>;

class LoopObject;

class LoopServer {
 public:
  // backend may be null: the loop calls then answer NotSupported.
  LoopServer(sdbus::IConnection& conn, LoopBackend* backend, LoopAuthFn auth, LoopLogFn log,
             LoopJobFn jobs = {});
  ~LoopServer();
  void setPidLookup(LoopPidFn pid) { pid_ = std::move(pid); }

  void setup(sdbus::Result<sdbus::ObjectPath, sdbus::UnixFd>&& result, sdbus::UnixFd fd,
             const wire::Options& options, const std::string& sender);
  void list(sdbus::Result<std::vector<wire::LoopEntry>>&& result, const wire::Options& options);
  // Exports objects for every bound device and drops the others. Never throws.
  void refresh();
  // Removes objects marked gone. Call outside any callback. Never throws.
  void collect();

  // For LoopObject.
  LoopBackend* backend() { return backend_; }
  void markGone(const std::string& name);
  using FailFn = std::function<void(const sdbus::Error&)>;
  // What a device call does once authorized: `run` on the worker (the backend call), and it
  // returns what then runs on the loop thread (the reply).
  using RunFn = std::function<std::function<void()>(uint32_t uid, bool force)>;
  void deviceCall(const std::string& name, const std::string& sender, const char* method,
                  const wire::Options& options, bool deleting, const std::string& what, FailFn fail,
                  RunFn run);
  // `work` off the loop, then `done` with its value on the loop thread; `fail` (Busy) when
  // the queue is full. Never throws.
  template <class T>
  void offLoop(std::function<T()> work, std::function<void(T&)> done, FailFn fail);
  bool hasJobs() const { return static_cast<bool>(jobs_); }
  void log(BusLogLevel level, const std::string& message);
  sdbus::Error errorOf(const Error& e, const std::string& name);
  void updated(const std::string& name, const LoopInfo& info);
  // A property refresh job's answer (LoopObject::refreshLater).
  void refreshed(const std::string& name, Result<LoopInfo>& r);

 private:
  void exportDevice(const LoopInfo& info);
  void authorizeDevice(const LoopInfo& device, const std::string& sender,
                       const wire::LoopCallOptions& opt, bool deleting, const std::string& what,
                       FailFn fail, RunFn run);
  void setupAllowed(const std::shared_ptr<sdbus::Result<sdbus::ObjectPath, sdbus::UnixFd>>& result,
                    const std::shared_ptr<sdbus::UnixFd>& backing, const LoopSetupOptions& options,
                    uint32_t uid);
  void listed(std::vector<LoopInfo>& all, bool showForeign,
              sdbus::Result<std::vector<wire::LoopEntry>>& result);

  sdbus::IConnection& conn_;
  LoopBackend* backend_;
  LoopAuthFn auth_;
  LoopLogFn log_;
  LoopPidFn pid_;
  LoopJobFn jobs_;
  std::map<std::string, std::unique_ptr<LoopObject>> objects_;
  std::set<std::string> gone_;
};

}  // namespace cxiosync::dbus
