// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// cxiosyncctl: argument parsing (pure) and verb execution. main.cpp is a thin shell around run().
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dbus/bus_server.h"  // BusTarget
#include "policy/result.h"

namespace cxiosync::ctl {

// Exit codes, the same for every verb (systemd.exec(5) table); `status` follows LSB.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,
  kExitInvalidArgs = 2,
  kExitNotRunningLsb = 3,  // `status` only: the daemon is not running
  kExitPermission = 4,     // also `status`: state unknown (cannot reach the bus)
  kExitBadConfig = 6,      // check-config: invalid or unreadable (as cxiosyncd --check-config)
  kExitNotRunning = 7,
};

enum class JsonMode { Off, Pretty, Short };

// Options of the loop verbs (loop add/list/set/detach); rejected with any other verb.
// Values are checked while parsing (sizes: policy parseSize, as cxiosync-loop).
struct LoopFlags {
  bool readOnly = false, autoclear = false, partscan = false;  // add
  bool all = false;                                            // list
  bool capacity = false;                                       // set
  bool force = false;                                          // set, detach
  std::optional<uint64_t> offset, size;                        // add
  std::optional<uint32_t> blockSize;        // add, set: a power of two 512..65536
  std::optional<std::string> directIo;      // add (auto|on|off), set (on|off)
  std::optional<std::string> backend;       // add: kernel|nbd|auto
  std::optional<uint32_t> workers;          // add, set: 1..16
  std::optional<uint32_t> queueDepth;       // add, set: 4..hw_queue_depth (the daemon checks)
  std::optional<uint32_t> nbdTimeout;       // add: seconds
  std::optional<std::string> serverCgroup;  // add: caller|daemon (nbd server's cgroup)
  bool any() const {
    return readOnly || autoclear || partscan || all || capacity || force || offset || size ||
           blockSize || directIo || backend || workers || queueDepth || nbdTimeout || serverCgroup;
  }
};

struct CliOptions {
  JsonMode json = JsonMode::Off;
  bool noPager = false;
  bool noLegend = false;
  bool quiet = false;
  bool noAskPassword = false;
  bool runtime = false;
  bool help = false;
  dbus::BusTarget bus = dbus::BusTarget::system();
  std::optional<uint32_t> userUid;  // --user: CG names a unit of this uid's user manager
  LoopFlags loop;
};

struct Invocation {
  CliOptions options;
  std::string verb;  // "status" when none was given
  std::vector<std::string> args;
};

// Parses argv[1..]. Options may come before or after the verb; "--" ends options.
// Errors (EINVAL) carry the message to print; the exit code is then kExitInvalidArgs.
Result<Invocation> parseArgs(const std::vector<std::string>& args);

std::string usage();

struct Io {
  std::function<void(const std::string&)> out;   // stdout, unbuffered semantics (monitor)
  std::function<void(const std::string&)> err;   // stderr
  std::function<void(const std::string&)> page;  // long output: a pager on a terminal
  bool color = false;                            // stdout is a colour terminal
  int stopFd = -1;                               // monitor stops when readable (signalfd)
};

int run(const Invocation& inv, const Io& io);

}  // namespace cxiosync::ctl
