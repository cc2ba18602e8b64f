// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// NbdManager: the nbd multi-worker backend's device lifecycle for the daemon and the
// cxiosync-loop tool — set up (spawn a cxiosync-nbd-server for the caller's backing fd), list,
// show (with the server's liveness), detach; ownership recorded in <run-dir>/nbd.json
// (flock on nbd.lock), like loops.json for kernel loop devices.
//
// Rules as for loop devices: a device cxiosync did not set up (nbd-client, qemu-nbd) is
// foreign and never touched except by root with force; whether a caller may detach another
// uid's device is the bus layer's decision (polkit loop-delete-others), as for loop devices.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/blockdev/backend.h"
#include "daemon/blockdev/nbd/nbd_cgroup.h"
#include "daemon/blockdev/nbd/nbd_device.h"

namespace cxiosync {

struct NbdOptions {
  int workers = 1;  // 1..kMaxLoopWorkers: connections = worker threads
  bool readOnly = false;
  uint32_t blockSize = 0;  // 0: 512
  uint32_t timeoutSec = nbd::kDefaultTimeoutSec;
  DirectIoMode directIo = DirectIoMode::Auto;  // On: fail unless O_DIRECT works
  // Where the server runs, so its backing I/O is charged there (nbd_cgroup.h). Caller needs
  // callerPid (from the bus; the development tool passes its own).
  nbd::ServerCgroup serverCgroup = nbd::ServerCgroup::Default;
  pid_t callerPid = 0;
};

struct NbdRecord {
  int index = -1;
  uint32_t uid = 0;
  int64_t createdUnix = 0;
  pid_t pid = 0;
  int workers = 1;
  std::string backingDev;  // "MAJ:MIN" of the backing file's filesystem
  uint64_t backingInode = 0;
  std::string backingFile;
  bool readOnly = false;
  bool directIo = false;
  uint32_t blockSize = 0;
  uint32_t timeoutSec = 0;
  // The server's cgroup right after it started (read back from /proc) and why it is there
  // ("caller" | "daemon"); both "" in records written before this field.
  std::string serverCgroup;
  std::string serverCgroupMode;
};
std::string nbdRecordsToJson(const std::vector<NbdRecord>& r);
// Like loopRecordsFromJson (daemon/blockdev/loop/loop_state.h): EINVAL only when the text is
// not an object with an "nbd" array; records that cannot be read are left out, with why in
// `skipped`; unknown keys and a newer "version" are ignored; backing_file is bytes.
Result<std::vector<NbdRecord>> nbdRecordsFromJson(const std::string& text,
                                                  std::vector<std::string>* skipped = nullptr);

// "nbd3", "/dev/nbd3" -> 3; EINVAL otherwise (a bare number is a loop device's).
Result<int> parseNbdName(std::string_view text);

struct NbdManagerOptions {
  std::string runDir = "/run/cxiosync";
  std::string sysRoot = "/sys";
  std::string devRoot = "/dev";
  std::string serverPath;  // "" = nbd::defaultServerPath()
  std::string procRoot = "/proc";
  std::string cgroupRoot = "/sys/fs/cgroup";
  std::chrono::milliseconds stopWait{5000};
};

class NbdManager {
 public:
  explicit NbdManager(NbdManagerOptions o);
  // Loads the nbd module when needed (modprobe nbd), spawns the server, records ownership.
  Result<BlockDeviceInfo> setup(int backingFd, const NbdOptions& o, uint32_t callerUid);
  Result<std::vector<BlockDeviceInfo>> list(bool includeForeign);
  Result<BlockDeviceInfo> show(std::string_view dev);
  // Always ENOTSUP: the kernel fixes the connection count at NBD_DO_IT.
  Result<BlockDeviceInfo> setWorkers(std::string_view dev, int workers, uint32_t callerUid);
  struct DetachResult {
    std::string name;
    bool detached = false;
    std::string note;
  };
  Result<DetachResult> detach(std::string_view dev, uint32_t callerUid, bool force);

 private:
  Result<std::vector<NbdRecord>> load();
  Status save(const std::vector<NbdRecord>& r);
  Result<UniqueFd> lock();
  BlockDeviceInfo info(const nbd::DeviceState& s, const std::optional<NbdRecord>& rec);
  NbdManagerOptions o_;
};

}  // namespace cxiosync
