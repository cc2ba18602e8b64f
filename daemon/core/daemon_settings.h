// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// What the daemon core is told at start: where the kernel's and its own files are, and the
// few command-line overrides of the configuration. The command line itself (bus, logging,
// one-shot modes) belongs to app/options.h, which extends this.
#include <optional>
#include <string>

#include "daemon/core/notify.h"
#include "policy/config/knobs.h"

namespace cxiosync {

// Where [X-CxIOSync] unit drop-ins come from (daemon/sources/unit_dropins.h).
enum class UnitDropInMode {
  Auto,     // systemd when it is PID 1 and answers, else Files
  Systemd,  // ask PID 1 only (GetUnitByControlGroup + DropInPaths)
  Files,    // systemd's standard-conf search path below unitRoot, without asking systemd
  Off,
};

struct DaemonSettings {
  // A config directory (cxiosync.yaml + cxiosync.d/*.yaml) or one YAML file.
  std::string configPath = "/etc/cxiosync";
  std::string cgroupRoot = "/sys/fs/cgroup";
  std::string procRoot = "/proc";
  std::string sysRoot = "/sys";
  std::string tracefsRoot = "/sys/kernel/tracing";
  std::string runDir = "/run/cxiosync";
  std::string devRoot = "/dev";                // loop device nodes and /dev/loop-control
  std::string stateDir = "/var/lib/cxiosync";  // persistent runtime policy (D-Bus changes)
  UnitDropInMode unitDropIns = UnitDropInMode::Auto;
  std::string unitRoot;                  // prefix of the unit search path (Files mode; tests)
  std::optional<DetectorKind> detector;  // overrides the config's `detector`
  bool dryRun = false;                   // overrides the config's `dry_run` when set
  ShutdownOverride assumeShutdown = ShutdownOverride::None;
};

}  // namespace cxiosync
