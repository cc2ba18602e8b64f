// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// What a client sees of the org.cxiosync1.Manager API, as plain values (no sdbus-c++ types):
// returned by Client (dbus/client.h), rendered by cxiosyncctl (dbus/ctl/). Mirrors the IDL.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cxiosync::dbus {

inline constexpr uint64_t kWireMax = UINT64_MAX;  // "max" on the wire

struct StatusView {
  std::string version;
  std::string detector;
  bool dryRun = false;
  std::string state;
  std::string stateDetail;
  uint64_t startedRealtimeUsec = 0;
  std::string cgroupRoot;
  uint32_t activeBoosts = 0;
  uint32_t activeSyncers = 0;
  uint64_t boostsTotal = 0;
  std::vector<std::string> configFiles;
};

struct LimitRow {
  std::string device;
  uint64_t rbps = kWireMax, wbps = kWireMax, riops = kWireMax, wiops = kWireMax;
};

struct EffectiveRow {
  std::string device;
  uint64_t wbps = kWireMax, wiops = kWireMax;
  std::string wbpsHolder, wiopsHolder;
};

struct PolicyRow {
  std::string knob, value, source;
};

struct CgroupView {
  std::string path;
  std::vector<LimitRow> ioMax;
  std::vector<EffectiveRow> effective;
  uint64_t fileDirty = 0, fileWriteback = 0;
  std::vector<PolicyRow> policy;
  bool boosted = false;
  // The value of a policy knob, "" when absent.
  std::string knob(const std::string& name) const;
};

struct LimitsView {
  uint64_t rbps = kWireMax, wbps = kWireMax, riops = kWireMax, wiops = kWireMax;
};

struct BoostView {
  std::string cgroup, dirtier, device;
  LimitsView original, boosted;
  uint64_t startedRealtimeUsec = 0, durationUsec = 0;
  std::vector<int64_t> syncerTids;
  std::string reason;
  bool shutdownLift = false;
};

struct SyncerView {
  int64_t tid = 0, pid = 0;
  std::string comm, cgroup, syscall, device;
  uint64_t durationUsec = 0;
  std::string state;
};

// One signal, as `monitor` prints it.
struct EventView {
  std::string name;  // "SyncDetected", "BoostStarted", "BoostEnded", "PolicyChanged"
  std::vector<std::pair<std::string, std::string>> fields;  // (arg name, value as text)
  std::vector<std::pair<std::string, uint64_t>> numbers;    // numeric args (JSON numbers)
};

}  // namespace cxiosync::dbus
