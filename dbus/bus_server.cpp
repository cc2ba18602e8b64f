// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/bus_server.h"

#include <poll.h>
#include <time.h>

#include <cerrno>
#include <chrono>
#include <functional>

#include <sdbus-c++/sdbus-c++.h>

#include "cxiosync1_adaptor.h"  // generated from org.cxiosync1.xml
#include "dbus/authorizer.h"
#include "dbus/loop_server.h"
#include "dbus/reply.h"
#include "dbus/sdbus_compat.h"
#include "dbus/validate.h"
#include "dbus/wire.h"

namespace cxiosync::dbus {

namespace {

constexpr const char* kPolkitPath = "/org/freedesktop/PolicyKit1/Authority";
constexpr const char* kPolkitInterface = "org.freedesktop.PolicyKit1.Authority";
constexpr const char* kFailed = "org.cxiosync1.Error.Failed";
// polkit may wait for a person typing a password: allow that much when interactive.
constexpr auto kPolkitInteractiveTimeout = std::chrono::seconds(120);
constexpr auto kPolkitTimeout = std::chrono::seconds(10);
// Bounded waiting (authorizer.h). dbus-daemon lets us wait for 128 replies at once
// (max_replies_per_connection): 48 polkit checks and 32 caller lookups stay below it, so a
// flood from one user can neither exhaust it nor shut the others out (16 per uid).
constexpr size_t kPolkitPerUid = 16;
constexpr size_t kPolkitTotal = 48;
constexpr size_t kLookupsTotal = 32;
// LoopSetup pins the caller's message and its fds (up to max_message_unix_fds, 16 on the
// system bus) while polkit is asked: 4 per uid, 16 in all, at most 16 x 17 fds.
constexpr size_t kLoopSetupsPerUid = 4;
constexpr size_t kLoopSetupsTotal = 16;
constexpr uint32_t kCallerNotKnown = UINT32_MAX;  // the lookup slots' key

sdbus::Error toSdbus(const Error& e) {
  return compat::error(errorKindName(errorKindOf(e)), e.message);
}

// One slot of a PendingLimit, released once: when the call is answered, or when sd-bus drops
// the pending call (and with it the callback holding this) at disconnect.
class Slot {
 public:
  Slot(PendingLimit& limit, uint32_t uid) : limit_(&limit), uid_(uid) {}
  ~Slot() { release(); }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  void release() {
    if (limit_) limit_->release(uid_);
    limit_ = nullptr;
  }

 private:
  PendingLimit* limit_;
  uint32_t uid_;
};

// A change that passed validation: what to run once authorized, and how to announce it.
struct Mutation {
  const char* method = "";  // "SetIsolation", for the log
  std::string what;         // for the authorization message: "set sync_isolation on /a"
  MethodOptions options;
  std::function<Status(const ChangeOptions&)> apply;
  std::string cgroup, knob, value;  // PolicyChanged arguments
};

MethodOptions parseOptionsOrThrow(const wire::Options& options, bool allowRuntime) {
  std::map<std::string, std::string> keys;
  std::map<std::string, bool> bools;
  wire::splitOptions(options, keys, bools);
  auto parsed = parseMethodOptions(keys, bools, allowRuntime);
  if (!parsed) throw toSdbus(parsed.error());
  return *parsed;
}

// The escaped form of a name that is not UTF-8 ("/\xff") names that cgroup (wire::text).
CgroupPath cgroupOrThrow(const std::string& text) {
  auto parsed = parseCgroupText(text);
  if (!parsed) throw toSdbus(parsed.error());
  return *parsed;
}

// Runs a handler's work: sdbus::Error passes through, everything else becomes Error.Failed
// (sdbus-c++ 1.2 aborts the process on any other exception escaping a handler).
using LogFn = std::function<void(BusLogLevel, const std::string&)>;

void logSafely(const LogFn& log, BusLogLevel level, const std::string& message) {
  if (!log) return;
  try {
    log(level, message);
  } catch (...) {
  }
}

template <class F>
auto guarded(const LogFn& log, const char* method, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const sdbus::Error&) {
    throw;
  } catch (const std::exception& e) {
    logSafely(log, BusLogLevel::Warning, std::string(method) + ": internal error: " + e.what());
    throw compat::error(kFailed, std::string(method) + ": internal error: " + e.what());
  } catch (...) {
    logSafely(log, BusLogLevel::Warning, std::string(method) + ": internal error");
    throw compat::error(kFailed, std::string(method) + ": internal error");
  }
}

// A property getter's value or error: sdbus-c++ builds that reply itself (properties have no
// asynchronous form), so the message is made text here rather than in reply.h.
template <class F>
auto propertyValue(const LogFn& log, const char* name, F&& f) -> decltype(f()) {
  try {
    return guarded(log, name, std::forward<F>(f));
  } catch (const sdbus::Error& e) {
    throw compat::error(e.getName(), wire::text(e.getMessage()));
  }
}

class Adaptor;

}  // namespace

struct BusServer::Impl {
  using RefuseFn = std::function<void(const Refusal&)>;
  using UidFn = std::function<void(std::optional<uint32_t> uid, const std::string& error)>;

  ManagerBackend& backend;
  BusServerOptions options;
  // Declared before conn: pending calls dropped with the connection release their slots here.
  PendingLimit polkitChecks{kPolkitPerUid, kPolkitTotal};
  PendingLimit lookups{kLookupsTotal, kLookupsTotal};
  PendingLimit loopSetups{kLoopSetupsPerUid, kLoopSetupsTotal};
  std::unique_ptr<sdbus::IConnection> conn;
  std::unique_ptr<Adaptor> adaptor;
  // Declared after conn so they are destroyed first (pending async calls are dropped).
  std::unique_ptr<sdbus::IProxy> busDriver;
  std::unique_ptr<sdbus::IProxy> polkit;
  std::unique_ptr<LoopServer> loops;
  // Last published property values, for PropertiesChanged.
  std::string detector;
  bool dryRun = false;
  uint32_t activeBoosts = 0;

  Impl(ManagerBackend& b, BusServerOptions o) : backend(b), options(std::move(o)) {}
  ~Impl();

  void runMutation(sdbus::Result<>&& result, const char* method,
                   const std::function<Mutation()>& prepare);
  void authorizeThen(std::shared_ptr<sdbus::Result<>> result, std::shared_ptr<Mutation> m,
                     const std::string& sender);
  void askPolkit(std::shared_ptr<sdbus::Result<>> result, std::shared_ptr<Mutation> m,
                 const std::string& sender, uint32_t uid);
  // The bus driver's GetConnectionUnixUser for `sender` (or uidOverride), asynchronously.
  void askUid(const std::string& sender, UidFn done);
  // The caller's uid, then `next(uid)`; `refused` on failure or when too many lookups wait.
  void callerUid(const std::string& sender, std::function<void(uint32_t)> next, RefuseFn refused);
  // The bus driver's GetConnectionCredentials for `sender`: its pid and pidfd (ProcessFD, where
  // the bus has one); pid 0 and the error when it cannot say.
  using ProcessFn = std::function<void(const CallerProcess&, const std::string& error)>;
  void askProcess(const std::string& sender, ProcessFn done);
  // The same lookup's pid alone (LoopPidFn: the nbd server_cgroup=caller lookup).
  void askPid(const std::string& sender, std::function<void(uint32_t, const std::string&)> done);
  // authorize() for `action`, asking polkit when it says so. Exactly one of the two is called.
  void checkAction(const std::string& sender, uint32_t uid, const std::string& action,
                   const std::string& what, bool interactive, std::function<void()> allowed,
                   RefuseFn refused);
  void authorizeLoop(LoopAuthRequest request, std::function<void(uint32_t)> allowed,
                     RefuseFn refused);
  void recheckThen(const std::string& sender, uint32_t uid, const std::string& what,
                   std::shared_ptr<Slot> slot, std::function<void()> allowed, RefuseFn refused);
  void finish(const std::shared_ptr<sdbus::Result<>>& result, const Mutation& m, uint32_t uid);
  void replyError(const std::shared_ptr<sdbus::Result<>>& result, const char* method,
                  const sdbus::Error& e) {
    reply::error(*result, method, e, options.log);
  }
  void emitPolicyChanged(const std::string& cgroup, const std::string& knob,
                         const std::string& value, const std::string& source);
  void refreshProperties();
  void note(BusLogLevel level, const std::string& message) {
    logSafely(options.log, level, message);
  }
  void refuse(const std::shared_ptr<sdbus::Result<>>& result, const char* method,
              const Refusal& refusal);
};

namespace {

class Adaptor final : public sdbus::AdaptorInterfaces<org::cxiosync1::Manager_adaptor> {
 public:
  Adaptor(sdbus::IConnection& conn, BusServer::Impl& impl)
      : AdaptorInterfaces(conn, sdbus::ObjectPath(kObjectPath)), impl_(impl) {
    registerAdaptor();
  }
  ~Adaptor() { unregisterAdaptor(); }

  sdbus::IObject& object() { return getObject(); }

 private:
  ManagerBackend& backend() { return impl_.backend; }

  // A read: run `f` (validation, the backend, toWire), then send its value or its error
  // through reply.h, the one place replies leave.
  template <class T, class F>
  void read(sdbus::Result<T>&& result, const char* method, F&& f) {
    const sdbus::Result<T> r = std::move(result);
    try {
      T value = guarded(impl_.options.log, method, std::forward<F>(f));
      reply::results(r, method, impl_.options.log, value);
    } catch (const sdbus::Error& e) {
      reply::error(r, method, e, impl_.options.log);
    }
  }

  void GetStatus(sdbus::Result<wire::Options>&& result, wire::Options options) override {
    read(std::move(result), "GetStatus", [&] {
      parseOptionsOrThrow(options, false);
      return wire::toWire(backend().status());
    });
  }

  void ListCgroups(sdbus::Result<std::vector<wire::Cgroup>>&& result,
                   wire::Options options) override {
    read(std::move(result), "ListCgroups", [&] {
      parseOptionsOrThrow(options, false);
      auto list = backend().listCgroups();
      if (!list) throw toSdbus(list.error());
      std::vector<wire::Cgroup> out;
      for (const auto& c : *list) out.push_back(wire::toWire(c));
      return out;
    });
  }

  void ShowCgroup(sdbus::Result<wire::Cgroup>&& result, std::string cgroup,
                  wire::Options options) override {
    read(std::move(result), "ShowCgroup", [&] {
      auto path = cgroupOrThrow(cgroup);
      parseOptionsOrThrow(options, false);
      auto info = backend().showCgroup(path);
      if (!info) throw toSdbus(info.error());
      return wire::toWire(*info);
    });
  }

  void ListBoosts(sdbus::Result<std::vector<wire::Boost>>&& result,
                  wire::Options options) override {
    read(std::move(result), "ListBoosts", [&] {
      parseOptionsOrThrow(options, false);
      std::vector<wire::Boost> out;
      for (const auto& b : backend().listBoosts()) out.push_back(wire::toWire(b));
      return out;
    });
  }

  void ListSyncers(sdbus::Result<std::vector<wire::Syncer>>&& result,
                   wire::Options options) override {
    read(std::move(result), "ListSyncers", [&] {
      parseOptionsOrThrow(options, false);
      std::vector<wire::Syncer> out;
      for (const auto& s : backend().listSyncers()) out.push_back(wire::toWire(s));
      return out;
    });
  }

  // The text is the backend's (formatMetrics escapes label values itself, metrics.cpp); were
  // it not UTF-8, reply.h answers Error.Failed rather than dropping the reply.
  void GetMetrics(sdbus::Result<std::string>&& result, wire::Options options) override {
    read(std::move(result), "GetMetrics", [&] {
      parseOptionsOrThrow(options, false);
      return backend().metrics();
    });
  }

  void SetIsolation(sdbus::Result<>&& result, std::string cgroup, bool enabled,
                    wire::Options options) override {
    impl_.runMutation(std::move(result), "SetIsolation", [&] {
      auto path = cgroupOrThrow(cgroup);
      Mutation m;
      m.options = parseOptionsOrThrow(options, true);
      m.what = "set sync_isolation of " + path.display();
      m.cgroup = path.display();
      m.knob = "sync_isolation";
      m.value = enabled ? "on" : "off";
      m.apply = [this, path, enabled](const ChangeOptions& o) {
        return backend().setIsolation(path, enabled, o);
      };
      return m;
    });
  }

  void SetBoostPolicy(sdbus::Result<>&& result, std::string cgroup, std::string policy,
                      wire::Options options) override {
    impl_.runMutation(std::move(result), "SetBoostPolicy", [&] {
      auto path = cgroupOrThrow(cgroup);
      auto permission = parseBoostPermission(policy);
      if (!permission) throw toSdbus(permission.error());
      Mutation m;
      m.options = parseOptionsOrThrow(options, true);
      m.what = "set the boost policy of " + path.display();
      m.cgroup = path.display();
      m.knob = "boost";
      m.value = boostPermissionName(*permission);
      m.apply = [this, path, p = *permission](const ChangeOptions& o) {
        return backend().setBoostPolicy(path, p, o);
      };
      return m;
    });
  }

  void SetBoostCeiling(sdbus::Result<>&& result, std::string cgroup, std::string ceiling,
                       wire::Options options) override {
    impl_.runMutation(std::move(result), "SetBoostCeiling", [&] {
      auto path = cgroupOrThrow(cgroup);
      auto parsed = parseBoostCeiling(ceiling);
      if (!parsed) throw toSdbus(parsed.error());
      Mutation m;
      m.options = parseOptionsOrThrow(options, true);
      m.what = "set the boost ceiling of " + path.display();
      m.cgroup = path.display();
      m.knob = "boost_ceiling";
      m.value = formatBoostCeiling(*parsed);
      m.apply = [this, path, c = *parsed](const ChangeOptions& o) {
        return backend().setBoostCeiling(path, c, o);
      };
      return m;
    });
  }

  void SetTenant(sdbus::Result<>&& result, std::string cgroup, bool enabled,
                 wire::Options options) override {
    impl_.runMutation(std::move(result), "SetTenant", [&] {
      auto path = cgroupOrThrow(cgroup);
      Mutation m;
      m.options = parseOptionsOrThrow(options, true);
      m.what = "set the tenant boundary of " + path.display();
      m.cgroup = path.display();
      m.knob = "tenant";
      m.value = enabled ? "on" : "off";
      m.apply = [this, path, enabled](const ChangeOptions& o) {
        return backend().setTenant(path, enabled, o);
      };
      return m;
    });
  }

  void ResetPolicy(sdbus::Result<>&& result, std::string cgroup, wire::Options options) override {
    impl_.runMutation(std::move(result), "ResetPolicy", [&] {
      auto path = cgroupOrThrow(cgroup);
      Mutation m;
      m.options = parseOptionsOrThrow(options, false);
      m.what = "reset the policy of " + path.display();
      m.cgroup = path.display();
      m.apply = [this, path](const ChangeOptions& o) { return backend().resetPolicy(path, o); };
      return m;
    });
  }

  void Reload(sdbus::Result<>&& result, wire::Options options) override {
    impl_.runMutation(std::move(result), "Reload", [&] {
      Mutation m;
      m.options = parseOptionsOrThrow(options, false);
      m.what = "reload the configuration";
      m.apply = [this](const ChangeOptions&) { return backend().reload(); };
      return m;
    });
  }

  void LoopSetup(sdbus::Result<sdbus::ObjectPath, sdbus::UnixFd>&& result, sdbus::UnixFd fd,
                 wire::Options options) override {
    std::string sender = compat::currentSender(getObject());
    impl_.loops->setup(std::move(result), std::move(fd), options, sender);
  }

  void LoopList(sdbus::Result<std::vector<wire::LoopEntry>>&& result,
                wire::Options options) override {
    impl_.loops->list(std::move(result), options);
  }

  // Property getters run inside sdbus callbacks too: same rule, never let anything escape.
  std::string Version() override {
    return propertyValue(impl_.options.log, "Get(Version)",
                         [&] { return wire::text(backend().status().version); });
  }
  std::string Detector() override {
    return propertyValue(impl_.options.log, "Get(Detector)",
                         [&] { return wire::text(backend().status().detector); });
  }
  bool DryRun() override {
    return propertyValue(impl_.options.log, "Get(DryRun)",
                         [&] { return backend().status().dryRun; });
  }
  uint32_t ActiveBoosts() override {
    return propertyValue(impl_.options.log, "Get(ActiveBoosts)",
                         [&] { return backend().status().activeBoosts; });
  }

  BusServer::Impl& impl_;
};

}  // namespace

BusServer::Impl::~Impl() {
  loops.reset();
  polkit.reset();
  busDriver.reset();
  adaptor.reset();
}

void BusServer::Impl::refuse(const std::shared_ptr<sdbus::Result<>>& result, const char* method,
                             const Refusal& refusal) {
  note(BusLogLevel::Info, "refused: " + refusal.message);
  replyError(result, method, compat::error(refusal.errorName(), refusal.message));
}

void BusServer::Impl::runMutation(sdbus::Result<>&& result, const char* method,
                                  const std::function<Mutation()>& prepare) {
  auto shared = std::make_shared<sdbus::Result<>>(std::move(result));
  try {
    // Validation first: nothing is touched, nobody is asked, for bad input.
    auto m = std::make_shared<Mutation>(prepare());
    m->method = method;
    std::string sender = compat::currentSender(adaptor->object());
    authorizeThen(shared, std::move(m), sender);
  } catch (const sdbus::Error& e) {
    replyError(shared, method, e);
  } catch (const std::exception& e) {
    note(BusLogLevel::Warning, std::string(method) + ": internal error: " + e.what());
    replyError(shared, method,
               compat::error(kFailed, std::string(method) + ": internal error: " + e.what()));
  } catch (...) {
    replyError(shared, method, compat::error(kFailed, std::string(method) + ": internal error"));
  }
}

// The caller's uid comes from the bus driver (GetConnectionUnixUser on the unique name),
// asked asynchronously: authoritative (the kernel's SO_PEERCRED as seen by dbus-daemon), not
// racy like reading /proc/PID, and the loop never waits on it.
void BusServer::Impl::askUid(const std::string& sender, UidFn done) {
  if (options.uidOverride) {
    done(*options.uidOverride, {});
    return;
  }
  busDriver->callMethodAsync("GetConnectionUnixUser")
      .onInterface("org.freedesktop.DBus")
      .withTimeout(kPolkitTimeout)
      .withArguments(sender)
      .uponReplyInvoke([done](compat::AsyncError err, uint32_t uid) {
        try {
          if (err) {
            done(std::nullopt, err->getName() + ": " + err->getMessage());
          } else {
            done(uid, {});
          }
        } catch (...) {
          // done never throws; nothing sensible is left to do here.
        }
      });
}

void BusServer::Impl::askProcess(const std::string& sender, ProcessFn done) {
  using Creds = std::map<std::string, sdbus::Variant>;
  try {
    busDriver->callMethodAsync("GetConnectionCredentials")
        .onInterface("org.freedesktop.DBus")
        .withTimeout(kPolkitTimeout)
        .withArguments(sender)
        .uponReplyInvoke([done](compat::AsyncError err, Creds creds) {
          try {
            if (err) {
              done({}, err->getName() + ": " + err->getMessage());
              return;
            }
            CallerProcess p;
            sdbus::UnixFd pidfd;  // owned here: open while done() reads through it
            auto pid = creds.find("ProcessID");
            if (pid != creds.end() && compat::typeOf(pid->second) == "u")
              p.pid = pid->second.get<uint32_t>();
            auto fd = creds.find("ProcessFD");
            if (fd != creds.end() && compat::typeOf(fd->second) == "h") {
              pidfd = fd->second.get<sdbus::UnixFd>();
              p.pidfd = pidfd.get();
            }
            done(p, p.pid ? "" : "the bus names no process for the caller");
          } catch (...) {
          }
        });
  } catch (const sdbus::Error& e) {
    done({}, e.getName() + ": " + e.getMessage());
  }
}

void BusServer::Impl::askPid(const std::string& sender,
                             std::function<void(uint32_t, const std::string&)> done) {
  askProcess(sender,
             [done](const CallerProcess& p, const std::string& error) { done(p.pid, error); });
}

void BusServer::Impl::callerUid(const std::string& sender, std::function<void(uint32_t)> next,
                                RefuseFn refused) {
  if (sender.empty() && !options.uidOverride) {
    // A direct (peer-to-peer) connection has no bus driver; we never export on one.
    refused(Refusal::denied("Cannot identify the caller (no sender on the message)"));
    return;
  }
  if (!lookups.tryAcquire(kCallerNotKnown)) {
    refused(Refusal::busy("Not now: " + std::to_string(lookups.held()) +
                          " calls are waiting for the bus to name their caller; nothing was "
                          "changed, try again"));
    return;
  }
  auto slot = std::make_shared<Slot>(lookups, kCallerNotKnown);
  askUid(sender, [this, sender, slot, next, refused](std::optional<uint32_t> uid,
                                                     const std::string& error) {
    if (!uid) {
      slot->release();
      refused(Refusal::denied("Cannot identify the caller: " + error));
      return;
    }
    if (*uid != 0 || !options.rootCallerProblem || options.uidOverride) {
      slot->release();
      next(*uid);
      return;
    }
    // uid 0: trusted without polkit only as root of the initial user namespace with
    // CAP_SYS_ADMIN (audit L5, issue 25). Refused, not sent to polkit: polkitd says yes to
    // every uid-0 subject, whatever its namespace or capabilities.
    askProcess(sender,
               [this, slot, next, refused](const CallerProcess& p, const std::string& pidError) {
                 slot->release();
                 std::string problem = p.pid ? options.rootCallerProblem(p) : pidError;
                 if (!problem.empty()) {
                   note(BusLogLevel::Info, "uid 0 not trusted as root: " + problem);
                   refused(Refusal::denied(kRootRefusal));
                   return;
                 }
                 next(0);
               });
  });
}

void BusServer::Impl::checkAction(const std::string& sender, uint32_t uid,
                                  const std::string& action, const std::string& what,
                                  bool interactive, std::function<void()> allowed,
                                  RefuseFn refused) {
  auto first = authorize(uid, action, what, PolkitAnswer::NotAsked, interactive);
  if (first.verdict == AuthDecision::Verdict::Allow) {
    allowed();
    return;
  }
  if (first.verdict == AuthDecision::Verdict::Deny) {
    refused(Refusal::denied(first.message));
    return;
  }
  if (!polkitChecks.tryAcquire(uid)) {
    refused(Refusal::busy(busyMessage(uid, what, polkitChecks)));
    return;
  }
  auto slot = std::make_shared<Slot>(polkitChecks, uid);
  using Subject = sdbus::Struct<std::string, std::map<std::string, sdbus::Variant>>;
  Subject subject{"system-bus-name", {{"name", sdbus::Variant(sender)}}};
  std::map<std::string, std::string> details;
  polkit->callMethodAsync("CheckAuthorization")
      .onInterface(kPolkitInterface)
      .withTimeout(interactive ? kPolkitInteractiveTimeout : kPolkitTimeout)
      .withArguments(subject, action, details, polkitFlags(interactive), std::string())
      .uponReplyInvoke([this, slot, sender, uid, action, what, interactive, allowed, refused](
                           compat::AsyncError err,
                           sdbus::Struct<bool, bool, std::map<std::string, std::string>> reply) {
        try {
          PolkitAnswer answer = err ? polkitAnswerFromError(err->getName())
                                    : polkitAnswerFromReply(reply.get<0>(), reply.get<1>());
          auto d = authorize(uid, action, what, answer, interactive);
          if (d.verdict != AuthDecision::Verdict::Allow) {
            slot->release();
            if (answer == PolkitAnswer::Failed && err) {
              d.message += " (" + err->getName() + ": " + err->getMessage() + ")";
            }
            refused(Refusal::denied(d.message));
            return;
          }
          recheckThen(sender, uid, what, slot, allowed, refused);
        } catch (...) {
          slot->release();
          refused(Refusal::denied("authorization: internal error"));
        }
      });
}

// polkit said yes for the name: is that name still the caller we asked about? A unique name
// is never reused, but a polkit that answered for a name that has gone (CVE-2021-3560) or a
// caller that left while a password was typed must not get the change (audit L5).
void BusServer::Impl::recheckThen(const std::string& sender, uint32_t uid, const std::string& what,
                                  std::shared_ptr<Slot> slot, std::function<void()> allowed,
                                  RefuseFn refused) {
  askUid(sender, [slot, uid, what, allowed, refused](std::optional<uint32_t> now,
                                                     const std::string& error) {
    slot->release();
    if (!now) {
      refused(Refusal::denied("Not allowed to " + what + ": the caller (uid " +
                              std::to_string(uid) +
                              ") is no longer on the bus after authorization (" + error + ")"));
      return;
    }
    if (*now != uid) {
      refused(Refusal::denied("Not allowed to " + what + ": the caller's uid changed from " +
                              std::to_string(uid) + " to " + std::to_string(*now) +
                              " during authorization"));
      return;
    }
    allowed();
  });
}

void BusServer::Impl::authorizeThen(std::shared_ptr<sdbus::Result<>> result,
                                    std::shared_ptr<Mutation> m, const std::string& sender) {
  callerUid(
      sender,
      [this, result, m, sender](uint32_t uid) {
        try {
          askPolkit(result, m, sender, uid);
        } catch (...) {
          replyError(result, m->method, compat::error(kFailed, "authorization: internal error"));
        }
      },
      [this, result, m](const Refusal& r) { refuse(result, m->method, r); });
}

void BusServer::Impl::askPolkit(std::shared_ptr<sdbus::Result<>> result,
                                std::shared_ptr<Mutation> m, const std::string& sender,
                                uint32_t uid) {
  checkAction(
      sender, uid, kManageAction, m->what, m->options.interactive,
      [this, result, m, uid] {
        try {
          finish(result, *m, uid);
        } catch (...) {
          replyError(result, m->method, compat::error(kFailed, "authorization: internal error"));
        }
      },
      [this, result, m](const Refusal& r) { refuse(result, m->method, r); });
}

void BusServer::Impl::authorizeLoop(LoopAuthRequest request, std::function<void(uint32_t)> allowed,
                                    RefuseFn refused) {
  auto req = std::make_shared<LoopAuthRequest>(std::move(request));
  callerUid(
      req->sender,
      [this, req, allowed, refused](uint32_t uid) {
        try {
          auto d = req->decide(uid);
          if (!d.refusal.empty()) {
            refused(Refusal::denied(d.refusal));
            return;
          }
          if (d.action.empty()) {
            allowed(uid);
            return;
          }
          // A call that holds the caller's fds while polkit is asked (LoopSetup) takes a slot
          // of its own; uid 0 never waits.
          std::shared_ptr<Slot> fdSlot;
          if (req->holdsFds && uid != 0) {
            if (!loopSetups.tryAcquire(uid)) {
              refused(Refusal::busy(busyMessage(uid, req->what, loopSetups)));
              return;
            }
            fdSlot = std::make_shared<Slot>(loopSetups, uid);
          }
          checkAction(
              req->sender, uid, d.action, req->what, req->interactive,
              [allowed, uid, fdSlot] {
                if (fdSlot) fdSlot->release();
                allowed(uid);
              },
              [refused, fdSlot](const Refusal& r) {
                if (fdSlot) fdSlot->release();
                refused(r);
              });
        } catch (...) {
          refused(Refusal::denied("authorization: internal error"));
        }
      },
      refused);
}

void BusServer::Impl::finish(const std::shared_ptr<sdbus::Result<>>& result, const Mutation& m,
                             uint32_t uid) {
  Status status = makeError("not applied");
  try {
    status = m.apply(ChangeOptions{m.options.runtime, uid});
  } catch (const std::exception& e) {
    status = makeError(m.what + ": internal error: " + e.what(), EIO);
    note(BusLogLevel::Warning, status.error().message);
  } catch (...) {
    status = makeError(m.what + ": internal error", EIO);
    note(BusLogLevel::Warning, status.error().message);
  }
  if (!status) {
    replyError(result, m.method, toSdbus(status.error()));
    return;
  }
  std::string done = "uid " + std::to_string(uid) + ": " + m.what;
  if (!m.knob.empty()) done += " to " + m.value;
  if (m.options.runtime) done += " (runtime)";
  note(BusLogLevel::Notice, done);
  // Caller gone or not: the change is made all the same, so it is announced.
  reply::results(*result, m.method, options.log);
  emitPolicyChanged(m.cgroup, m.knob, m.value, m.knob.empty() ? "" : "runtime");
  refreshProperties();
}

void BusServer::Impl::emitPolicyChanged(const std::string& cgroup, const std::string& knob,
                                        const std::string& value, const std::string& source) {
  try {
    adaptor->emitPolicyChanged(wire::text(cgroup), wire::text(knob), wire::text(value),
                               wire::text(source));
  } catch (...) {
  }
}

void BusServer::Impl::refreshProperties() {
  try {
    auto s = backend.status();
    std::vector<std::string> changed;
    if (s.detector != detector) changed.push_back("Detector");
    if (s.dryRun != dryRun) changed.push_back("DryRun");
    if (s.activeBoosts != activeBoosts) changed.push_back("ActiveBoosts");
    detector = s.detector;
    dryRun = s.dryRun;
    activeBoosts = s.activeBoosts;
    if (!changed.empty())
      compat::emitPropertiesChanged(adaptor->object(), kManagerInterface, changed);
  } catch (...) {
  }
}

// ---- BusTarget -------------------------------------------------------------------------

Result<BusTarget> BusTarget::parse(std::string_view text) {
  if (text == "system") return BusTarget::system();
  if (text == "session" || text == "user") return BusTarget::session();
  if (text.find(':') != std::string_view::npos && text.find('=') != std::string_view::npos) {
    return BusTarget::at(std::string(text));
  }
  return makeError("bus '" + std::string(text) +
                       "' is not \"system\", \"session\" or a D-Bus address "
                       "(e.g. unix:path=/run/dbus/system_bus_socket)",
                   EINVAL);
}

std::string BusTarget::describe() const {
  switch (kind) {
    case Kind::System:
      return "system";
    case Kind::Session:
      return "session";
    case Kind::Address:
      break;
  }
  return address;
}

// ---- BusServer -------------------------------------------------------------------------

BusServer::BusServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BusServer::~BusServer() = default;

Result<std::unique_ptr<BusServer>> BusServer::create(ManagerBackend& backend,
                                                     BusServerOptions options) {
  auto impl = std::make_unique<Impl>(backend, std::move(options));
  const auto& opt = impl->options;
  try {
    switch (opt.bus.kind) {
      case BusTarget::Kind::System:
        impl->conn = sdbus::createSystemBusConnection();
        break;
      case BusTarget::Kind::Session:
        impl->conn = sdbus::createSessionBusConnection();
        break;
      case BusTarget::Kind::Address:
        impl->conn = sdbus::createSessionBusConnectionWithAddress(opt.bus.address);
        break;
    }
  } catch (const sdbus::Error& e) {
    return makeError("cannot connect to the " + opt.bus.describe() + " bus: " + e.getMessage(),
                     EIO);
  }
  try {
    impl->adaptor = std::make_unique<Adaptor>(*impl->conn, *impl);
    impl->busDriver =
        compat::createProxy(*impl->conn, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    impl->polkit = compat::createProxy(*impl->conn, opt.polkitBusName, kPolkitPath);
    Impl* raw = impl.get();
    impl->loops = std::make_unique<LoopServer>(
        *impl->conn, opt.loopBackend,
        [raw](LoopAuthRequest r, std::function<void(uint32_t)> allowed,
              std::function<void(const Refusal&)> refused) {
          raw->authorizeLoop(std::move(r), std::move(allowed), std::move(refused));
        },
        opt.log, opt.loopJobs);
    impl->loops->setPidLookup(
        [raw](const std::string& sender, std::function<void(uint32_t, const std::string&)> done) {
          raw->askPid(sender, std::move(done));
        });
    impl->loops->refresh();
    impl->loops->collect();
    auto s = backend.status();
    impl->detector = s.detector;
    impl->dryRun = s.dryRun;
    impl->activeBoosts = s.activeBoosts;
  } catch (const sdbus::Error& e) {
    return makeError("cannot export " + std::string(kObjectPath) + ": " + e.getMessage(), EIO);
  } catch (const std::exception& e) {
    return makeError(std::string("cannot set up the bus server: ") + e.what(), EIO);
  }
  // Request the name last: once we own it, calls may arrive, and everything is ready.
  try {
    compat::requestName(*impl->conn, opt.busName);
  } catch (const sdbus::Error& e) {
    return makeError(
        "cannot own " + opt.busName + " on the " + opt.bus.describe() +
            " bus (another instance running, or the bus policy refuses it): " + e.getMessage(),
        EEXIST);
  }
  return std::unique_ptr<BusServer>(new BusServer(std::move(impl)));
}

int BusServer::fd() const {
  return pollSpec().fd;
}

PollSpec BusServer::pollSpec() const {
  PollSpec spec;
  try {
    auto data = compat::pollData(*impl_->conn);
    spec.fd = data.fd;
    spec.eventFd = data.eventFd;
    spec.events = static_cast<uint32_t>(static_cast<unsigned short>(data.events));
    spec.timeoutMs = data.timeoutMs();
    if (data.timeoutUsec) {
      spec.timeoutUsec =
          *data.timeoutUsec > INT64_MAX ? INT64_MAX : static_cast<int64_t>(*data.timeoutUsec);
    }
  } catch (...) {
    spec.events = POLLIN;
  }
  return spec;
}

bool BusServer::process() {
  try {
    // Bounded: a flood of calls must not starve the daemon's other sources.
    for (int i = 0; i < 256; ++i) {
      if (!compat::processPending(*impl_->conn)) break;
    }
    impl_->loops->collect();
    return connected();
  } catch (const sdbus::Error&) {
    // One event that failed, or the connection gone: only the second is fatal (audit M4: a
    // single error used to drop the API for good).
    return connected();
  } catch (...) {
    return connected();
  }
}

// sd-bus refuses the poll data of a closed connection (ENOTCONN): after the bus daemon hung
// up, the first process() fails every pending call and closes it.
bool BusServer::connected() const {
  try {
    (void)compat::pollData(*impl_->conn);
    return true;
  } catch (...) {
    return false;
  }
}

void BusServer::syncDetected(const SyncerInfo& s) {
  try {
    impl_->adaptor->emitSyncDetected(s.tid, s.pid, wire::text(s.comm),
                                     wire::text(s.cgroup.display()), wire::text(s.syscall));
  } catch (...) {
  }
}

void BusServer::boostStarted(const BoostInfo& b) {
  try {
    impl_->adaptor->emitBoostStarted(wire::text(b.cgroup.display()),
                                     wire::text(b.dirtier.display()), b.device.str(),
                                     b.original.wbps.value_or(kUnlimited),
                                     b.boosted.wbps.value_or(kUnlimited), wire::text(b.reason));
  } catch (...) {
  }
  impl_->refreshProperties();
}

void BusServer::boostEnded(const BoostInfo& b, const std::string& reason) {
  try {
    impl_->adaptor->emitBoostEnded(wire::text(b.cgroup.display()), wire::text(b.dirtier.display()),
                                   b.device.str(), wire::text(reason), b.durationUsec);
  } catch (...) {
  }
  impl_->refreshProperties();
}

void BusServer::policyChanged(const std::string& cgroup, const std::string& knob,
                              const std::string& value, const std::string& source) {
  impl_->emitPolicyChanged(cgroup, knob, value, source);
}

void BusServer::propertiesMayHaveChanged() {
  impl_->refreshProperties();
}

std::string BusServer::uniqueName() const {
  try {
    return impl_->conn->getUniqueName();
  } catch (...) {
    return {};
  }
}

}  // namespace cxiosync::dbus
