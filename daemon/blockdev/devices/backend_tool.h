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
#include "policy/output/table.h"

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
