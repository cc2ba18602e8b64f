// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/client.h"

#include <poll.h>

#include <chrono>

#include <sdbus-c++/sdbus-c++.h>

#include "dbus/loop_wire.h"
#include "dbus/sdbus_compat.h"
#include "dbus/wire.h"

namespace cxiosync::dbus {

namespace {

constexpr auto kReadTimeout = std::chrono::seconds(25);
constexpr auto kChangeTimeout = std::chrono::seconds(30);
// A person may be typing a password into a polkit agent.
constexpr auto kInteractiveTimeout = std::chrono::seconds(150);

[[noreturn]] void rethrow(const sdbus::Error& e) {
  throw ClientError(e.getName(), e.getMessage());
}

wire::Options changeOptions(const ChangeRequest& req, bool withRuntime) {
  wire::Options o;
  if (req.interactive) o["interactive"] = sdbus::Variant(true);
  if (withRuntime && req.runtime) o["runtime"] = sdbus::Variant(true);
  return o;
}

std::chrono::seconds changeTimeout(const ChangeRequest& req) {
  return req.interactive ? kInteractiveTimeout : kChangeTimeout;
}

}  // namespace

bool ClientError::daemonNotRunning() const {
  return name_ == "org.freedesktop.DBus.Error.ServiceUnknown" ||
         name_ == "org.freedesktop.DBus.Error.NameHasNoOwner" ||
         name_ == "org.freedesktop.DBus.Error.Spawn.ChildExited" ||
         name_ == "org.freedesktop.DBus.Error.Spawn.ServiceNotFound" ||
         name_ == "org.freedesktop.systemd1.NoSuchUnit";
}

Client::~Client() {
  proxy_.reset();
  conn_.reset();
}

std::unique_ptr<Client> Client::connect(const BusTarget& bus, const std::string& busName) {
  std::unique_ptr<Client> c(new Client());
  c->busName_ = busName;
  try {
    switch (bus.kind) {
      case BusTarget::Kind::System:
        c->conn_ = sdbus::createSystemBusConnection();
        break;
      case BusTarget::Kind::Session:
        c->conn_ = sdbus::createSessionBusConnection();
        break;
      case BusTarget::Kind::Address:
        c->conn_ = sdbus::createSessionBusConnectionWithAddress(bus.address);
        break;
    }
    c->proxy_ = compat::createProxy(*c->conn_, busName, kObjectPath);
  } catch (const sdbus::Error& e) {
    throw ClientError(ClientError::kNoBus,
                      "Failed to connect to the " + bus.describe() + " bus: " + e.getMessage());
  }
  return c;
}

bool Client::daemonRunning() {
  try {
    auto driver = compat::createProxy(*conn_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    bool has = false;
    driver->callMethod("NameHasOwner")
        .onInterface("org.freedesktop.DBus")
        .withArguments(busName_)
        .withTimeout(kReadTimeout)
        .storeResultsTo(has);
    return has;
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

StatusView Client::status() {
  try {
    wire::Options out;
    proxy_->callMethod("GetStatus")
        .onInterface(kManagerInterface)
        .withArguments(wire::Options{})
        .withTimeout(kReadTimeout)
        .storeResultsTo(out);
    auto s = wire::statusFromWire(out);
    if (!s) throw ClientError("org.cxiosync1.Client.BadReply", s.error().message);
    return *s;
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

std::vector<CgroupView> Client::listCgroups() {
  try {
    std::vector<wire::Cgroup> out;
    proxy_->callMethod("ListCgroups")
        .onInterface(kManagerInterface)
        .withArguments(wire::Options{})
        .withTimeout(kReadTimeout)
        .storeResultsTo(out);
    std::vector<CgroupView> v;
    for (const auto& c : out) v.push_back(wire::fromWire(c));
    return v;
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

CgroupView Client::showCgroup(const std::string& cgroup) {
  try {
    wire::Cgroup out;
    proxy_->callMethod("ShowCgroup")
        .onInterface(kManagerInterface)
        .withArguments(cgroup, wire::Options{})
        .withTimeout(kReadTimeout)
        .storeResultsTo(out);
    return wire::fromWire(out);
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

std::vector<BoostView> Client::listBoosts() {
  try {
    std::vector<wire::Boost> out;
    proxy_->callMethod("ListBoosts")
        .onInterface(kManagerInterface)
        .withArguments(wire::Options{})
        .withTimeout(kReadTimeout)
        .storeResultsTo(out);
    std::vector<BoostView> v;
    for (const auto& b : out) v.push_back(wire::fromWire(b));
    return v;
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

std::vector<SyncerView> Client::listSyncers() {
  try {
    std::vector<wire::Syncer> out;
    proxy_->callMethod("ListSyncers")
        .onInterface(kManagerInterface)
        .withArguments(wire::Options{})
        .withTimeout(kReadTimeout)
        .storeResultsTo(out);
    std::vector<SyncerView> v;
    for (const auto& s : out) v.push_back(wire::fromWire(s));
    return v;
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

std::string Client::metrics() {
  try {
    std::string out;
    proxy_->callMethod("GetMetrics")
        .onInterface(kManagerInterface)
        .withArguments(wire::Options{})
        .withTimeout(kReadTimeout)
        .storeResultsTo(out);
    return out;
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

std::string Client::version() {
  try {
    sdbus::Variant v = proxy_->getProperty("Version").onInterface(kManagerInterface);
    return v.get<std::string>();
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

void Client::setIsolation(const std::string& cgroup, bool on, const ChangeRequest& req) {
  try {
    proxy_->callMethod("SetIsolation")
        .onInterface(kManagerInterface)
        .withArguments(cgroup, on, changeOptions(req, true))
        .withTimeout(changeTimeout(req));
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

void Client::setTenant(const std::string& cgroup, bool on, const ChangeRequest& req) {
  try {
    proxy_->callMethod("SetTenant")
        .onInterface(kManagerInterface)
        .withArguments(cgroup, on, changeOptions(req, true))
        .withTimeout(changeTimeout(req));
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

void Client::setBoostPolicy(const std::string& cgroup, const std::string& policy,
                            const ChangeRequest& req) {
  try {
    proxy_->callMethod("SetBoostPolicy")
        .onInterface(kManagerInterface)
        .withArguments(cgroup, policy, changeOptions(req, true))
        .withTimeout(changeTimeout(req));
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

void Client::setBoostCeiling(const std::string& cgroup, const std::string& ceiling,
                             const ChangeRequest& req) {
  try {
    proxy_->callMethod("SetBoostCeiling")
        .onInterface(kManagerInterface)
        .withArguments(cgroup, ceiling, changeOptions(req, true))
        .withTimeout(changeTimeout(req));
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

void Client::resetPolicy(const std::string& cgroup, const ChangeRequest& req) {
  try {
    proxy_->callMethod("ResetPolicy")
        .onInterface(kManagerInterface)
        .withArguments(cgroup, changeOptions(req, false))
        .withTimeout(changeTimeout(req));
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

void Client::reload(const ChangeRequest& req) {
  try {
    proxy_->callMethod("Reload")
        .onInterface(kManagerInterface)
        .withArguments(changeOptions(req, false))
        .withTimeout(changeTimeout(req));
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

std::string Client::introspect() {
  try {
    std::string xml;
    proxy_->callMethod("Introspect")
        .onInterface("org.freedesktop.DBus.Introspectable")
        .withTimeout(kReadTimeout)
        .storeResultsTo(xml);
    return xml;
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

namespace {

bool unknownObject(const sdbus::Error& e) {
  return e.getName() == "org.freedesktop.DBus.Error.UnknownObject" ||
         e.getName() == "org.freedesktop.DBus.Error.UnknownMethod" ||
         e.getName() == "org.freedesktop.DBus.Error.UnknownInterface";
}

[[noreturn]] void noSuchDevice(const std::string& name) {
  throw ClientError("org.cxiosync1.Error.NoSuchDevice",
                    "No loop device " + name + " (it does not exist or is not bound)");
}

wire::Options loopOptions(const Client::LoopRequest& req) {
  wire::Options o;
  if (req.interactive) o["interactive"] = sdbus::Variant(true);
  if (req.force) o["force"] = sdbus::Variant(true);
  return o;
}

}  // namespace

Client::LoopSetupReply Client::loopSetup(int backingFd, const LoopSetupOptions& options,
                                         bool interactive) {
  try {
    wire::LoopSetupRequest r{options, interactive};
    sdbus::ObjectPath path;
    sdbus::UnixFd devFd;
    proxy_->callMethod("LoopSetup")
        .onInterface(kManagerInterface)
        .withArguments(sdbus::UnixFd(backingFd), wire::loopSetupOptionsToWire(r))
        .withTimeout(interactive ? kInteractiveTimeout : kChangeTimeout)
        .storeResultsTo(path, devFd);
    LoopSetupReply reply;
    reply.objectPath = path;
    reply.deviceFd = devFd.release();
    std::string name = wire::loopNameOfPath(path);
    try {
      reply.device = loopShow(name);
    } catch (...) {
      reply.device.name = name;
      reply.device.device = "/dev/" + name;
    }
    return reply;
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

std::vector<LoopInfo> Client::loopList(bool all) {
  try {
    std::vector<wire::LoopEntry> out;
    wire::Options o;
    if (all) o["all"] = sdbus::Variant(true);
    proxy_->callMethod("LoopList")
        .onInterface(kManagerInterface)
        .withArguments(o)
        .withTimeout(kReadTimeout)
        .storeResultsTo(out);
    std::vector<LoopInfo> v;
    for (const auto& e : out) {
      auto d = wire::loopFromWire(e.get<1>());
      if (!d) throw ClientError("org.cxiosync1.Client.BadReply", d.error().message);
      d->name = wire::loopNameOfPath(e.get<0>());
      v.push_back(*d);
    }
    return v;
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

LoopInfo Client::loopShow(const std::string& name) {
  if (!wire::validLoopName(name)) noSuchDevice(name);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      auto proxy = compat::createProxy(*conn_, busName_, wire::loopObjectPath(name));
      std::map<std::string, sdbus::Variant> props;
      proxy->callMethod("GetAll")
          .onInterface("org.freedesktop.DBus.Properties")
          .withArguments(std::string(wire::kLoopInterface))
          .withTimeout(kReadTimeout)
          .storeResultsTo(props);
      auto d = wire::loopFromWire(props);
      if (!d) throw ClientError("org.cxiosync1.Client.BadReply", d.error().message);
      d->name = name;
      return *d;
    } catch (const sdbus::Error& e) {
      if (!unknownObject(e)) rethrow(e);
      if (attempt == 0) {
        loopList(true);  // the daemon exports objects for devices it has not seen yet
        continue;
      }
      noSuchDevice(name);
    }
  }
  noSuchDevice(name);
}

namespace {

template <class... Args>
void loopCall(sdbus::IConnection& conn, const std::string& busName, const std::string& name,
              const char* method, bool interactive, Args&&... args) {
  auto proxy = compat::createProxy(conn, busName, wire::loopObjectPath(name));
  proxy->callMethod(method)
      .onInterface(wire::kLoopInterface)
      .withArguments(std::forward<Args>(args)...)
      .withTimeout(interactive ? kInteractiveTimeout : kChangeTimeout);
}

}  // namespace

#define CXIOSYNC_LOOP_CALL(...)                       \
  if (!wire::validLoopName(name)) noSuchDevice(name); \
  for (int attempt = 0; attempt < 2; ++attempt) {     \
    try {                                             \
      __VA_ARGS__;                                    \
      return;                                         \
    } catch (const sdbus::Error& e) {                 \
      if (!unknownObject(e)) rethrow(e);              \
      if (attempt == 0) {                             \
        loopList(true);                               \
        continue;                                     \
      }                                               \
      noSuchDevice(name);                             \
    }                                                 \
  }

void Client::loopSetDirectIO(const std::string& name, bool on, const LoopRequest& req) {
  CXIOSYNC_LOOP_CALL(
      loopCall(*conn_, busName_, name, "SetDirectIO", req.interactive, on, loopOptions(req)))
}

void Client::loopSetBlockSize(const std::string& name, uint32_t size, const LoopRequest& req) {
  CXIOSYNC_LOOP_CALL(
      loopCall(*conn_, busName_, name, "SetBlockSize", req.interactive, size, loopOptions(req)))
}

void Client::loopSetCapacity(const std::string& name, const LoopRequest& req) {
  CXIOSYNC_LOOP_CALL(
      loopCall(*conn_, busName_, name, "SetCapacity", req.interactive, loopOptions(req)))
}

void Client::loopSetAutoclear(const std::string& name, bool on, const LoopRequest& req) {
  CXIOSYNC_LOOP_CALL(
      loopCall(*conn_, busName_, name, "SetAutoclear", req.interactive, on, loopOptions(req)))
}

void Client::loopSetWorkers(const std::string& name, uint32_t workers, const LoopRequest& req) {
  CXIOSYNC_LOOP_CALL(
      loopCall(*conn_, busName_, name, "SetWorkers", req.interactive, workers, loopOptions(req)))
}

void Client::loopSetQueueDepth(const std::string& name, uint32_t depth, const LoopRequest& req) {
  CXIOSYNC_LOOP_CALL(
      loopCall(*conn_, busName_, name, "SetQueueDepth", req.interactive, depth, loopOptions(req)))
}

#undef CXIOSYNC_LOOP_CALL

bool Client::loopDetach(const std::string& name, const LoopRequest& req) {
  if (!wire::validLoopName(name)) noSuchDevice(name);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      auto proxy = compat::createProxy(*conn_, busName_, wire::loopObjectPath(name));
      bool lazy = false;
      proxy->callMethod("Detach")
          .onInterface(wire::kLoopInterface)
          .withArguments(loopOptions(req))
          .withTimeout(req.interactive ? kInteractiveTimeout : kChangeTimeout)
          .storeResultsTo(lazy);
      return lazy;
    } catch (const sdbus::Error& e) {
      if (!unknownObject(e)) rethrow(e);
      if (attempt == 0) {
        loopList(true);
        continue;
      }
      noSuchDevice(name);
    }
  }
  noSuchDevice(name);
}

void Client::monitor(const std::function<void(const EventView&)>& onEvent, int stopFd,
                     const std::function<void()>& onReady) {
  bool ownerGone = false;
  try {
    auto num = [](uint64_t v) { return v; };
    proxy_->uponSignal("SyncDetected")
        .onInterface(kManagerInterface)
        .call([&](int64_t tid, int64_t pid, const std::string& comm, const std::string& cgroup,
                  const std::string& syscall) {
          onEvent({"SyncDetected",
                   {{"comm", comm}, {"cgroup", cgroup}, {"syscall", syscall}},
                   {{"tid", static_cast<uint64_t>(tid)}, {"pid", static_cast<uint64_t>(pid)}}});
        });
    proxy_->uponSignal("BoostStarted")
        .onInterface(kManagerInterface)
        .call([&](const std::string& cgroup, const std::string& dirtier, const std::string& device,
                  uint64_t originalWbps, uint64_t boostedWbps, const std::string& reason) {
          onEvent(
              {"BoostStarted",
               {{"cgroup", cgroup}, {"dirtier", dirtier}, {"device", device}, {"reason", reason}},
               {{"original_wbps", num(originalWbps)}, {"boosted_wbps", num(boostedWbps)}}});
        });
    proxy_->uponSignal("BoostEnded")
        .onInterface(kManagerInterface)
        .call([&](const std::string& cgroup, const std::string& dirtier, const std::string& device,
                  const std::string& reason, uint64_t durationUsec) {
          onEvent(
              {"BoostEnded",
               {{"cgroup", cgroup}, {"dirtier", dirtier}, {"device", device}, {"reason", reason}},
               {{"duration_usec", durationUsec}}});
        });
    proxy_->uponSignal("PolicyChanged")
        .onInterface(kManagerInterface)
        .call([&](const std::string& cgroup, const std::string& knob, const std::string& value,
                  const std::string& source) {
          onEvent({"PolicyChanged",
                   {{"cgroup", cgroup}, {"knob", knob}, {"value", value}, {"source", source}},
                   {}});
        });
    compat::finishSubscriptions(*proxy_);

    // Stop when the daemon leaves the bus.
    auto driver = compat::createProxy(*conn_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    driver->uponSignal("NameOwnerChanged")
        .onInterface("org.freedesktop.DBus")
        .call([&](const std::string& name, const std::string&, const std::string& newOwner) {
          if (name == busName_ && newOwner.empty()) ownerGone = true;
        });
    compat::finishSubscriptions(*driver);

    if (onReady) onReady();
    while (!ownerGone) {
      while (compat::processPending(*conn_) && !ownerGone) {
      }
      if (ownerGone) break;
      auto pd = compat::pollData(*conn_);
      // Unused slots carry fd -1, which poll(2) skips.
      struct pollfd fds[3] = {{pd.fd, pd.events, 0}, {stopFd, POLLIN, 0}, {pd.eventFd, POLLIN, 0}};
      int timeout = -1;
      if (pd.timeoutUsec) timeout = 100;  // sd-bus has a deadline: check soon
      int n = ::poll(fds, 3, timeout);
      if (n < 0 && errno != EINTR) break;
      if (stopFd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) break;
    }
  } catch (const sdbus::Error& e) {
    rethrow(e);
  }
}

}  // namespace cxiosync::dbus
