// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// An in-memory ManagerBackend for the dbus tests and the test server: a fixed cgroup tree,
// one boost, one syncer, runtime policy overrides with inheritance. Deterministic (fixed
// timestamps and durations) so `--json` output can be compared with golden files.
//
// Special cgroups: "/legacy.slice" answers every change with NotSupported; "/broken.slice"
// throws std::runtime_error from every change and from ShowCgroup (the adaptor must turn it
// into Error.Failed and the server must survive).
#include <map>

#include "dbus/manager_backend.h"

namespace cxiosync::dbus::testing {

class FakeBackend : public ManagerBackend {
 public:
  FakeBackend();

  StatusInfo status() override;
  Result<std::vector<CgroupInfo>> listCgroups() override;
  Result<CgroupInfo> showCgroup(const CgroupPath& cgroup) override;
  std::vector<BoostInfo> listBoosts() override;
  std::vector<SyncerInfo> listSyncers() override;
  std::string metrics() override;

  Status setIsolation(const CgroupPath& cgroup, bool on, const ChangeOptions& opt) override;
  Status setTenant(const CgroupPath& cgroup, bool on, const ChangeOptions& opt) override;
  Status setBoostPolicy(const CgroupPath& cgroup, BoostPermission permission,
                        const ChangeOptions& opt) override;
  Status setBoostCeiling(const CgroupPath& cgroup, BoostCeiling ceiling,
                         const ChangeOptions& opt) override;
  Status resetPolicy(const CgroupPath& cgroup, const ChangeOptions& opt) override;
  Status reload() override;

  // Test controls.
  bool failNextReload = false;
  int mutations = 0;        // successful mutations so far
  bool extraBoost = false;  // a second boost (ActiveBoosts changes)
  ChangeOptions lastOptions;

 private:
  struct Node {
    std::vector<IoMaxEntry> ioMax;
    uint64_t dirty = 0, writeback = 0;
    PolicySettings runtime;  // runtime layer (Kind::Runtime)
    bool runtimeOnly = false;
  };
  Status check(const CgroupPath& cgroup);
  CgroupInfo info(const CgroupPath& path) const;
  std::map<CgroupPath, Node> tree_;
};

}  // namespace cxiosync::dbus::testing
