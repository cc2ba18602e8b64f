// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The cxiosync-loop tool's commands for backends, workers and queue depth (tool_main.cpp
// hands them over):
//
//   add FILE [--backend kernel|nbd|auto] [--workers N] [--queue-depth N] [--nbd-timeout S]
//            [the usual add options except --autoclear and -- CMD]
//   set DEV --workers N | --queue-depth N [--force]
//   show nbdN | detach nbdN [--force]
//   backends                 which backends this kernel offers (loop, nbd, ublk)
// and the WORKERS/BACKEND/QDEPTH parts of list/show.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/blockdev/devices/backend_devices.h"
#include "policy/output/table.h"

namespace cxiosync {

struct BlockToolGlobal {
  bool json = false;
  LoopManagerOptions mo;
  uint32_t uid = 0;
};

// Prints "cxiosync-loop: MESSAGE" to stderr; exit status 4 for EPERM/EACCES, else 1.
int loopToolFail(const Error& e);
// A bad command line: "cxiosync-loop: [COMMAND: ]MESSAGE" (one line), exit status 2.
inline constexpr int kLoopToolUsage = 2;
int loopToolUsage(const std::string& command, const Error& e);

// `add`'s command line: one parser for both halves of the tool (the kernel loop through
// LoopManager; any backend through BlockDevices when a backend option is given).
struct AddArgs {
  std::string file;
  BlockSetupOptions setup;           // setup.loop: the loop device's options
  bool fdReadOnly = false;           // test aid: open FILE read-only without --read-only
  bool backendOptions = false;       // --backend, --workers, --queue-depth, --nbd-timeout
  std::vector<std::string> command;  // after "--": runs while the tool holds the device
};
// sysRoot: the running kernel's hw_queue_depth bounds --queue-depth.
Result<AddArgs> parseAddArgs(const std::vector<std::string>& args, const std::string& sysRoot);
// FILE opened the way losetup does: read-write unless asked otherwise, read-only when the
// file or filesystem does not allow writing. Errors carry errno and "FILE: strerror".
Result<UniqueFd> openBackingFile(const AddArgs& a);
// add with a backend option: BlockDevices chooses and sets up; prints the device.
int blockToolAdd(const BlockToolGlobal& g, const AddArgs& a, int backingFd);

// `set DEV ...`: loop settings (direct I/O, block size, capacity, autoclear) or, alone, the
// backend settings (workers, queue depth).
struct SetArgs {
  std::string dev;
  bool force = false;
  bool capacity = false;
  std::optional<bool> directIo, autoclear;
  std::optional<uint32_t> blockSize;
  std::optional<int> workers;
  std::optional<uint32_t> queueDepth;
  bool backendSettings() const { return workers || queueDepth; }
  bool loopSettings() const { return capacity || directIo || autoclear || blockSize; }
};
Result<SetArgs> parseSetArgs(const std::vector<std::string>& args, const std::string& sysRoot);
int blockToolSet(const BlockToolGlobal& g, const SetArgs& a);

// The other commands' arguments: show DEV, detach DEV [--force], list [--all],
// backends, reconcile.
struct DeviceArgs {
  std::string dev;
  bool force = false;
  bool all = false;
};
Result<DeviceArgs> parseDeviceArgs(const std::string& cmd, const std::vector<std::string>& args);

// backends, and show/detach of an nbd device: -1 when `cmd` is not one (tool_main goes
// on), else the exit status.
int blockToolCommand(const BlockToolGlobal& g, const std::string& cmd, const DeviceArgs& a);

// The backend part of any device's record (output/table.h): JSON "backend", "workers",
// "queue-depth", "in-flight-max", "workers-settable-live", nbd: "server-pid",
// "server-alive", "note"; human BACKEND, WORKERS, QDEPTH.
std::vector<output::Column> blockInfoColumns();
std::vector<output::Cell> blockInfoCells(const BlockDeviceInfo& d);
// list/show of devices of any backend: the JSON records and the nbd rows under the loop
// table (NAME BACKEND WORKERS QDEPTH DIO RO OWNER SERVER BACK-FILE).
output::Table blockInfoTable(const std::vector<BlockDeviceInfo>& devs);
// Text: the table and its notes; one show paragraph.
void printBlockRows(const std::vector<BlockDeviceInfo>& devs);
void printBlockShow(const BlockDeviceInfo& d);
// A JSON document on stdout (pretty, as every cxiosync-loop --json answer).
void printJson(const output::Json& j);
// All nbd devices (ours, and foreign ones with includeForeign) for list.
std::vector<BlockDeviceInfo> listNbdDevices(const BlockToolGlobal& g, bool includeForeign);

}  // namespace cxiosync
