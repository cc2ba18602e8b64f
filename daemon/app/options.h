// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Command line of cxiosyncd. Pure: parseOptions() never touches the system, so tests can
// feed it argv directly. Exit codes: daemon/core/exit_codes.h.
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/daemon_settings.h"
#include "daemon/core/exit_codes.h"
#include "policy/config/knobs.h"
#include "policy/result.h"

namespace cxiosync {

// The command line: what the daemon core needs (DaemonSettings) plus what only main()
// uses (the bus, logging, one-shot modes).
struct Options : DaemonSettings {
  // D-Bus: "system" | "session" | "none" | an address ("unix:path=/run/x").
  std::string bus = "system";
  bool checkConfig = false;
  bool foreground = false;  // log to stderr even when started by systemd
  std::optional<std::string> logLevel;
  bool version = false;
  bool help = false;
  bool observe = false;
  // --cgroupns=FILE: a cgroup namespace file (/proc/1/ns/cgroup with the host's PIDs) entered
  // before anything else. A container has its own cgroup namespace (containerd, CRI-O: every
  // unprivileged container on cgroup v2), in which /proc/PID/cgroup of a process outside it
  // reads "0::/../.." and the daemon could place no syncer (docs/kubernetes.md).
  std::string cgroupNamespace;
};

// argv without argv[0]. Errors carry a one-line message for stderr (exit code 2).
Result<Options> parseOptions(const std::vector<std::string>& args);

std::string usageText();

}  // namespace cxiosync
