// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// `cxiosyncd --observe [--once] [--json]`: a read-only diagnostic that prints the live
// snapshot (limited cgroups with limits, dirty/writeback bytes, current syncers with their
// cgroups and what they wait on). Changes nothing on the system (the tracefs detector's
// private instance is the only thing created, and it is removed on exit).
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daemon/sense/snapshot_builder.h"
#include "policy/config/knobs.h"
#include "policy/model/snapshot.h"

namespace cxiosync {

struct ObserveOptions {
  SenseRoots roots;
  GlobalSettings settings;                // detector, poll_interval (refresh period), watch_fsync
  bool once = false;                      // one snapshot then exit (after one poll interval, so the
                                          // detector has had a chance to see running syncers)
  bool json = false;                      // one JSON object per line (JSON Lines)
  std::chrono::milliseconds duration{0};  // stop after this long (0 = until SIGINT/SIGTERM)
  bool onlyChanges = false;               // print only when syncers change (not --once)
  bool help = false;                      // --help: observeMain prints the usage
};

// Runs the diagnostic; returns the process exit code (0 ok, 1 runtime error).
int runObserve(const ObserveOptions& options);

// Parses observe's own command line ("--once --json --detector=procfs --cgroup-root=..."):
// for the standalone cxiosync-observe tool and for main.cpp's --observe.
Result<ObserveOptions> parseObserveArgs(const std::vector<std::string>& args);

// argv form: parseObserveArgs + runObserve, usage on --help / errors (exit code 2).
int observeMain(int argc, char** argv);

// Formatting, exposed for tests. `inodeName` resolves cgroup inodes that are not in the
// snapshot (tracefs waitsOn of an unlimited cgroup); may be empty.
using InodeResolver = std::function<std::optional<CgroupPath>(uint64_t)>;
std::string snapshotToJson(const Snapshot& s, const std::string& detector,
                           const InodeResolver& inodeName = {});
std::string snapshotToText(const Snapshot& s, const std::string& detector,
                           const InodeResolver& inodeName = {});

}  // namespace cxiosync
