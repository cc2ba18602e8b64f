// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// What the sensing half of the daemon saw at one instant: the planner's whole input about
// the system. Built by daemon/ adapters, consumed by the pure planner.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/formats/io_max.h"
#include "policy/model/cgroup_path.h"
#include "policy/model/dev_num.h"

namespace cxiosync {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

enum class SyncSyscall { Sync, Syncfs, Fsync, Fdatasync, SyncFileRange, Msync };
const char* syncSyscallName(SyncSyscall s);  // "sync", "syncfs", ...

// A thread inside a sync-family syscall.
struct Syncer {
  int64_t tid = 0;
  int64_t pid = 0;  // thread group id
  std::string comm;
  CgroupPath cgroup;
  SyncSyscall syscall = SyncSyscall::Sync;
  TimePoint since{};  // when the syscall was entered (or first seen, for procfs)
  // tracefs with trace_clock "mono": the kernel's timestamp of the enter event (since is
  // when the daemon read it). Diagnostics only (the detection-to-boost split).
  std::optional<TimePoint> entered;
  // syncfs/fsync family: the device of the file's filesystem, when known. sync: nullopt.
  std::optional<DevNum> targetDevice;
  // tracefs writeback_queue reason=sync: the cgroups (by inode) whose writeback this sync
  // is known to wait on, with the bdi. Empty when unknown (procfs, or not yet seen).
  std::vector<std::pair<uint64_t /*cgroup ino*/, DevNum>> waitsOn;
  // The effective uid of the thread (/proc/TID/status, as the initial user namespace sees it),
  // read once per sync call: a thread cannot change its own credentials while it waits in
  // the call. nullopt when it could not be read. Whose sync it is (docs/policy-semantics.md §5).
  std::optional<uint32_t> euid;
};

struct CgroupState {
  CgroupPath path;
  uint64_t inode = 0;             // cgroupfs directory inode (tracefs cgroup_ino)
  std::vector<IoMaxEntry> ioMax;  // own io.max lines as read
  uint64_t fileDirty = 0;         // memory.stat file_dirty, bytes
  uint64_t fileWriteback = 0;     // memory.stat file_writeback, bytes
  // The uid that owns the cgroup directory (systemd chowns a delegated unit's cgroup to its
  // User=): who a delegated tenant belongs to. nullopt when not known.
  std::optional<uint32_t> ownerUid;
};

// Block device stack: writes to `dev` are re-issued to `lower` (loop -> backing device,
// dm/md -> slaves, partition -> whole disk is NOT an edge: io.max only accepts whole disks).
struct DeviceStack {
  std::map<DevNum, std::vector<DevNum>> lower;
  // Devices reachable below `dev` (excluding dev itself), in breadth-first order.
  std::vector<DevNum> below(const DevNum& dev) const;
};

struct Snapshot {
  TimePoint now{};
  std::vector<Syncer> syncers;
  std::map<CgroupPath, CgroupState> cgroups;  // every cgroup the daemon looked at
  DeviceStack devices;
};

}  // namespace cxiosync
