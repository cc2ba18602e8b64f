// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Client library for org.cxiosync1.Manager (used by cxiosyncctl and the dbus tests).
// Synchronous calls on a connection the client owns, with no event-loop thread (sdbus-c++ 1.2:
// no light-weight proxies, so never the two-argument createProxy). Failures throw ClientError
// carrying the D-Bus error name, so callers can map names to exit codes.
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dbus/bus_server.h"    // BusTarget, names
#include "dbus/loop_backend.h"  // LoopInfo, LoopSetupOptions
#include "dbus/views.h"

namespace sdbus {
class IConnection;
class IProxy;
}  // namespace sdbus

namespace cxiosync::dbus {

class ClientError : public std::runtime_error {
 public:
  ClientError(std::string name, const std::string& message)
      : std::runtime_error(message), name_(std::move(name)) {}
  const std::string& name() const { return name_; }  // "org.cxiosync1.Error.NoSuchCgroup", ...
  // The daemon is not on the bus (not running, not activatable).
  bool daemonNotRunning() const;
  // The bus itself could not be reached.
  bool noBus() const { return name_ == kNoBus; }
  static constexpr const char* kNoBus = "org.cxiosync1.Client.NoBus";

 private:
  std::string name_;
};

struct ChangeRequest {
  bool runtime = false;
  bool interactive = false;  // allow a polkit password prompt (not --no-ask-password)
};

class Client {
 public:
  // Throws ClientError (kNoBus) when the bus cannot be reached.
  static std::unique_ptr<Client> connect(const BusTarget& bus,
                                         const std::string& busName = kBusName);
  ~Client();

  bool daemonRunning();  // NameHasOwner: does not activate the daemon

  StatusView status();
  std::vector<CgroupView> listCgroups();
  CgroupView showCgroup(const std::string& cgroup);
  std::vector<BoostView> listBoosts();
  std::vector<SyncerView> listSyncers();
  std::string metrics();
  std::string version();  // property Version

  void setIsolation(const std::string& cgroup, bool on, const ChangeRequest& req);
  void setTenant(const std::string& cgroup, bool on, const ChangeRequest& req);
  void setBoostPolicy(const std::string& cgroup, const std::string& policy,
                      const ChangeRequest& req);
  void setBoostCeiling(const std::string& cgroup, const std::string& ceiling,
                       const ChangeRequest& req);
  void resetPolicy(const std::string& cgroup, const ChangeRequest& req);
  void reload(const ChangeRequest& req);

  std::string introspect();  // org.freedesktop.DBus.Introspectable of /org/cxiosync1

  // Loop devices. Names are "loopN" or "nbdN". A device the daemon does not know (or that is not
  // bound) fails with org.cxiosync1.Error.NoSuchDevice.
  struct LoopRequest {
    bool interactive = false;
    bool force = false;
  };
  struct LoopSetupReply {
    std::string objectPath;
    LoopInfo device;
    int deviceFd = -1;  // owned by the caller: close it (autoclear: after use)
  };
  LoopSetupReply loopSetup(int backingFd, const LoopSetupOptions& options, bool interactive);
  std::vector<LoopInfo> loopList(bool all);
  LoopInfo loopShow(const std::string& name);
  void loopSetDirectIO(const std::string& name, bool on, const LoopRequest& req);
  void loopSetBlockSize(const std::string& name, uint32_t size, const LoopRequest& req);
  void loopSetCapacity(const std::string& name, const LoopRequest& req);
  void loopSetAutoclear(const std::string& name, bool on, const LoopRequest& req);
  void loopSetWorkers(const std::string& name, uint32_t workers, const LoopRequest& req);
  void loopSetQueueDepth(const std::string& name, uint32_t depth, const LoopRequest& req);
  bool loopDetach(const std::string& name, const LoopRequest& req);  // true: lazy

  // Subscribes to the Manager's signals and delivers them until `stopFd` becomes readable
  // (e.g. a signalfd for SIGINT/SIGTERM) or the daemon leaves the bus. `onReady` runs once
  // the match rules are installed (tests wait for it).
  void monitor(const std::function<void(const EventView&)>& onEvent, int stopFd,
               const std::function<void()>& onReady = {});

 private:
  Client() = default;
  std::unique_ptr<sdbus::IConnection> conn_;
  std::unique_ptr<sdbus::IProxy> proxy_;
  std::string busName_;
};

}  // namespace cxiosync::dbus
