// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// BusServer: exports org.cxiosync1.Manager at /org/cxiosync1 on a bus connection, wrapping a
// ManagerBackend, and is driven by the daemon's own single-threaded event loop.
//
// Wiring in the daemon (daemon/core/event_loop.h):
//   auto server = BusServer::create(backend, {.bus = BusTarget::system()});
//   if (!server) { log server.error().message; exit }      // name taken, no bus, ...
//   loop.addIo(server->fd(), EPOLLIN,
//       [&](uint32_t) { if (!server->process()) loop.exit(1); },
//       [&]() -> EventLoop::Prepared {
//         auto p = server->pollSpec();
//         return {EventLoop::pollToEpoll(p.events),
//                 p.timeoutUsec < 0 ? std::nullopt
//                                   : std::optional(std::chrono::microseconds(p.timeoutUsec))};
//       });
//   daemon.setEvents(server.get());   // ManagerEvents: the daemon emits signals through it
//
// Threading: everything (create, process, the ManagerEvents calls, destruction) on one thread.
// No sdbus-c++ types leak out of this header.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "dbus/loop_backend.h"
#include "dbus/manager_backend.h"
#include "policy/result.h"

namespace cxiosync::dbus {

inline constexpr const char* kBusName = "org.cxiosync1";
inline constexpr const char* kObjectPath = "/org/cxiosync1";
inline constexpr const char* kManagerInterface = "org.cxiosync1.Manager";
inline constexpr const char* kManageAction = "org.cxiosync1.manage";

// Which bus: the system bus, the session bus, or an explicit address (tests: a private
// dbus-daemon's "unix:path=...,guid=...").
struct BusTarget {
  enum class Kind { System, Session, Address } kind = Kind::System;
  std::string address;  // Kind::Address only

  static BusTarget system() { return {}; }
  static BusTarget session() { return {Kind::Session, {}}; }
  static BusTarget at(std::string address) { return {Kind::Address, std::move(address)}; }
  // "system" | "session" | an address containing ':' ("unix:path=/run/x"). EINVAL otherwise.
  static Result<BusTarget> parse(std::string_view text);
  std::string describe() const;  // "system", "session", or the address
};

enum class BusLogLevel { Info, Notice, Warning };

// The process the bus driver names for a connection (GetConnectionCredentials): its pid and,
// where the bus hands one out (dbus >= 1.15, dbus-broker), a pidfd for it (else -1; not
// owned, open only during the call it is passed to).
struct CallerProcess {
  uint32_t pid = 0;
  int pidfd = -1;
};

// The one AccessDenied text for a uid-0 caller that is not trusted as root (issue 25): what is
// required, never what was found ("gone", "uid X", "without CAP_SYS_ADMIN" would tell an
// attacker when a reused pid answers for it). The daemon's log has the detail.
inline constexpr const char* kRootRefusal =
    "Not allowed: a change needs root in the initial user namespace with CAP_SYS_ADMIN, or "
    "polkit authorization (which uid 0 cannot get through the daemon)";

struct BusServerOptions {
  BusTarget bus;
  // Where the server's own log lines go (the daemon routes them to spdlog/journald):
  // Notice for every change made (who, what), Info for refused calls, Warning for internal
  // errors caught in a handler. Unset: silent. Called on the loop thread; must not throw.
  std::function<void(BusLogLevel, const std::string&)> log;
  std::string busName = kBusName;  // the well-known name to request
  // Loop devices (org.cxiosync1.Loop, Manager.LoopSetup/LoopList); null: those calls answer
  // NotSupported. Not owned; must outlive the server.
  LoopBackend* loopBackend = nullptr;
  // Where loop jobs run (LoopJobFn, loop_backend.h); unset: inline, on the loop thread.
  LoopJobFn loopJobs;
  // uid 0 skips polkit only when this says "" for the caller's process (audit L5, issue 25:
  // CAP_SYS_ADMIN in the initial user namespace, daemon/kernel/caller_privilege.h); otherwise
  // the change is refused with kRootRefusal and this text is logged. It is not sent to polkit:
  // polkitd authorizes every uid-0 subject itself. Unset: uid 0 is trusted as the bus names
  // it. Called on the loop thread.
  std::function<std::string(const CallerProcess&)> rootCallerProblem;
  // Test hooks. Production leaves these alone.
  std::string polkitBusName = "org.freedesktop.PolicyKit1";  // where CheckAuthorization goes
  std::optional<uint32_t> uidOverride;  // treat every caller as this uid (tests only)
};

// What the event loop must wait for: poll(2) bits (POLLIN/POLLOUT, equal to EPOLLIN/EPOLLOUT)
// on fd, POLLIN on eventFd if there is one, and a timeout (-1: none; 0: call process() right away).
struct PollSpec {
  int fd = -1;
  // sdbus-c++ 2.x: a second fd to watch for POLLIN (sd-bus wakes it when replies were queued
  // while we were busy; without it they wait for the next bus traffic). -1 with 1.x.
  int eventFd = -1;
  uint32_t events = 0;
  int timeoutMs = -1;        // relative, rounded up to ms; -1: none
  int64_t timeoutUsec = -1;  // relative, in µs; -1: none
};

class BusServer final : public ManagerEvents {
 public:
  // Connects, exports the object and requests the name (synchronously; done before READY=1).
  // Errors (code EIO/EEXIST/...): no bus, name already owned, policy refused ownership.
  static Result<std::unique_ptr<BusServer>> create(ManagerBackend& backend,
                                                   BusServerOptions options);
  ~BusServer() override;
  BusServer(const BusServer&) = delete;
  BusServer& operator=(const BusServer&) = delete;

  // Event-loop integration. Re-read pollSpec() after every process() and before every wait
  // (sd-bus may want POLLOUT, or a timeout for pending async calls such as polkit's reply).
  int fd() const;
  PollSpec pollSpec() const;
  short events() const { return static_cast<short>(pollSpec().events); }
  int timeoutMs() const { return pollSpec().timeoutMs; }
  // Handles everything pending (method calls, polkit replies, outgoing queue). Never throws;
  // never blocks on anything but the bus daemon itself. Returns false if the connection is
  // dead (bus daemon went away): the daemon should log and exit (systemd restarts it).
  bool process();
  // false once the connection is closed (bus daemon gone, or it dropped us).
  bool connected() const;

  // ManagerEvents: emit signals / PropertiesChanged. Never throw.
  void syncDetected(const SyncerInfo& syncer) override;
  void boostStarted(const BoostInfo& boost) override;
  void boostEnded(const BoostInfo& boost, const std::string& reason) override;
  void policyChanged(const std::string& cgroup, const std::string& knob, const std::string& value,
                     const std::string& source) override;
  void propertiesMayHaveChanged() override;

  // The unique name of our connection (":1.42"), for logs and tests.
  std::string uniqueName() const;

  struct Impl;

 private:
  explicit BusServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cxiosync::dbus
