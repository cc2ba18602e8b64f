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
#include <string>
#include <vector>

#include "daemon/blockdev/devices/backend_devices.h"
#include "policy/json.h"

namespace cxiosync {

struct BlockToolGlobal {
  bool json = false;
  LoopManagerOptions mo;
  uint32_t uid = 0;
};

// Prints "cxiosync-loop: MESSAGE" to stderr; exit status 4 for EPERM/EACCES, else 1.
int loopToolFail(const Error& e);
// A size option's value (policy parseSize: "4096", "1M", "1.5G", "512 KiB"); exits 2 with
// the parser's message when it is not one.
uint64_t loopToolSize(const std::string& opt, const std::string& v);

// -1: not a backend command (tool_main goes on), else the exit status.
int blockToolCommand(const BlockToolGlobal& g, const std::string& cmd,
                     const std::vector<std::string>& args);

// For list/show of any device (JSON fields "backend", "workers", "queue-depth",
// "in-flight-max", nbd: "server-pid", "server-alive", "connections", "note").
// File and device names are bytes (policy/json.h).
void addBlockInfoFields(Json& obj, const BlockDeviceInfo& d);
Json blockInfoJson(const BlockDeviceInfo& d);
// Text: rows for nbd devices under the loop table; one show paragraph.
void printBlockRows(const std::vector<BlockDeviceInfo>& devs);
void printBlockShow(const BlockDeviceInfo& d);
// All nbd devices (ours, and foreign ones with includeForeign) for list.
std::vector<BlockDeviceInfo> listNbdDevices(const BlockToolGlobal& g, bool includeForeign);

}  // namespace cxiosync
