#pragma once
// Command line of cxiosyncd. Pure: parseOptions() never touches the system, so tests can
// feed it argv directly.
//
// Exit codes (documented in --help; the unit file sets RestartPreventExitStatus=2 6):
//   0  clean stop, or --check-config with a valid config, --version, --help
//   1  runtime failure (cannot open the cgroup root, the journal, ...)
//   2  bad command line
//   6  invalid configuration (--check-config, or at startup)
#include <optional>
#include <string>
#include <vector>

#include "daemon/notify.h"
#include "policy/config/knobs.h"
#include "policy/result.h"

namespace cxiosync {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBadConfig = 6;

// Where [X-CxIOSync] unit drop-ins come from (daemon/unit_dropins.h).
enum class UnitDropInMode {
  Auto,     // systemd when it is PID 1 and answers, else Files
  Systemd,  // ask PID 1 only (GetUnitByControlGroup + DropInPaths)
  Files,    // systemd's standard-conf search path below unitRoot, without asking systemd
  Off,
};

struct Options {
  // A config directory (cxiosync.yaml + cxiosync.d/*.yaml) or one YAML file.
  std::string configPath = "/etc/cxiosync";
  std::string cgroupRoot = "/sys/fs/cgroup";
  std::string procRoot = "/proc";
  std::string sysRoot = "/sys";
  std::string tracefsRoot = "/sys/kernel/tracing";
  std::string runDir = "/run/cxiosync";
  std::string devRoot = "/dev";                // loop device nodes and /dev/loop-control
  std::string stateDir = "/var/lib/cxiosync";  // persistent runtime policy (D-Bus changes)
  // D-Bus: "system" | "session" | "none" | an address ("unix:path=/run/x").
  std::string bus = "system";
  UnitDropInMode unitDropIns = UnitDropInMode::Auto;
  std::string unitRoot;                  // prefix of the unit search path (Files mode; tests)
  std::optional<DetectorKind> detector;  // overrides the config's `detector`
  bool dryRun = false;                   // overrides the config's `dry_run` when set
  bool checkConfig = false;
  bool foreground = false;  // log to stderr even when started by systemd
  std::optional<std::string> logLevel;
  bool version = false;
  bool help = false;
  bool observe = false;
  ShutdownOverride assumeShutdown = ShutdownOverride::None;
};

// argv without argv[0]. Errors carry a one-line message for stderr (exit code 2).
Result<Options> parseOptions(const std::vector<std::string>& args);

std::string usageText();

}  // namespace cxiosync
