// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// One block device of any backend (kernel loop or nbd): the one model the backends fill
// (daemon/blockdev/devices/backend_devices.h), the bus carries (dbus::LoopInfo is this type;
// dbus/loop_props.h maps it to the org.cxiosync1.Loop properties) and the CLIs print. Pure data.
#include <cstdint>
#include <optional>
#include <string>

#include "policy/blockdev/loop_vocab.h"

namespace cxiosync {

inline constexpr uint32_t kUnknownUid = UINT32_MAX;

struct BlockDevice {
  std::string name;    // "loop3" | "nbd0"
  std::string device;  // "/dev/loop3" (under --dev-root)
  BackendKind backend = BackendKind::Kernel;
  std::string backingFile;  // display only (may end in " (deleted)")
  uint64_t offset = 0, sizeLimit = 0, sizeBytes = 0;
  bool readOnly = false, autoclear = false, partscan = false;
  bool directIo = false;                     // effective (loop: sysfs dio; nbd: O_DIRECT)
  std::optional<DirectIoMode> directIoMode;  // asked at setup (nullopt for foreign)
  std::string directIoNote;                  // why off although asked for
  uint32_t blockSize = 0;                    // effective logical block size
  std::string blockSizeSource;               // "" for foreign
  uint32_t setupByUid = kUnknownUid;
  uint64_t setupRealtimeUsec = 0;
  bool foreign = true;                     // not set up by cxiosync (or no longer ours)
  std::string foreignOwner;                // "snap" | "systemd" | "udisks" | "manual" | ""
  std::string backingDevice, backingDisk;  // "MAJ:MIN" or ""
  uint32_t requestDepth = 0;               // queue/nr_requests
  uint32_t workers = 1;     // threads doing backing I/O (kernel loop: 1 per issuing cgroup)
  uint32_t queueDepth = 0;  // requests the device accepts at once (queue/nr_requests)
  bool workersSettable = false, queueDepthSettable = false;  // live, by this backend
  std::string serverCgroup;  // nbd: the server's cgroup v2 path; "" otherwise

  // Not on the bus.
  bool bound = true;         // false after a change that detached the device
  uint32_t inFlightMax = 1;  // backing I/Os that can really run at once (backend.h)
  int32_t serverPid = 0;     // nbd: the server process
  bool serverAlive = true;
  std::string serverCgroupMode;  // nbd: "caller" | "daemon" ("" for foreign)
  std::string note;              // e.g. "server dead: I/O fails"
};

}  // namespace cxiosync
