#include "daemon/app/options.h"

#include "daemon/log/logging.h"

namespace cxiosync {

std::string usageText() {
  return R"(Usage: cxiosyncd [OPTIONS]

Removes the sync()/io.max priority inversion: while a sync from outside a write-limited
cgroup waits on that cgroup's throttled writeback, the limit is lifted, then restored.

Options:
  --config=PATH          config directory (cxiosync.yaml + cxiosync.d/*.yaml; default
                         /etc/cxiosync, built-in defaults when absent) or one YAML file
  --check-config         validate the configuration and exit (0 valid, 6 invalid)
  --cgroup-root=DIR      cgroup2 mount (default /sys/fs/cgroup)
  --proc-root=DIR        procfs (default /proc)
  --sys-root=DIR         sysfs (default /sys)
  --tracefs-root=DIR     tracefs (default /sys/kernel/tracing)
  --run-dir=DIR          boost journal, metrics and loop device records, a tmpfs
                         (default /run/cxiosync)
  --dev-root=DIR         device nodes: /dev/loop-control, /dev/loopN (default /dev)
  --state-dir=DIR        persistent runtime policy set through D-Bus
                         (default /var/lib/cxiosync)
  --bus=BUS              D-Bus API on system | session | none | ADDRESS (default system;
                         without a bus the daemon runs on, without its API)
  --detector=KIND        auto | tracefs | procfs (overrides the config)
  --unit-dropins=MODE    where [X-CxIOSync] unit drop-ins come from: auto (systemd when it
                         is PID 1, else files), systemd (DropInPaths of each unit), files
                         (systemd's unit search path, read directly), off (default auto)
  --unit-root=DIR        read the unit search path below DIR (implies files; for tests)
  --dry-run              decide and log, never write io.max
  --foreground           log to stderr even when started by systemd
  --log-level=LEVEL      trace | debug | info | warning | error | critical | off
  --assume-shutdown=B    yes | no: override shutdown detection for lift_on_shutdown
                         (also: environment CXIOSYNC_ASSUME_SHUTDOWN=1|0)
  --observe              print what the sensing layer sees, change nothing
  --version              print the version and exit
  -h, --help             this text

Exit status: 0 ok, 1 runtime failure, 2 bad command line, 6 invalid configuration.
)";
}

Result<Options> parseOptions(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string name = a;
    std::optional<std::string> value;
    if (a.rfind("--", 0) == 0) {
      auto eq = a.find('=');
      if (eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
      }
    } else if (a != "-h") {
      return makeError("unexpected argument '" + a + "' (see --help)");
    }
    auto flag = [&](bool& target) -> Status {
      if (value) return makeError("option " + name + " takes no value");
      target = true;
      return Ok{};
    };
    auto needValue = [&]() -> Result<std::string> {
      if (value) {
        if (value->empty()) return makeError("option " + name + " needs a non-empty value");
        return *value;
      }
      if (i + 1 >= args.size()) return makeError("option " + name + " needs a value");
      const std::string& next = args[++i];
      if (next.empty()) return makeError("option " + name + " needs a non-empty value");
      return next;
    };
    auto path = [&](std::string& target) -> Status {
      auto v = needValue();
      if (!v) return v.error();
      target = v.value();
      return Ok{};
    };
    Status st = Ok{};
    if (name == "--config")
      st = path(o.configPath);
    else if (name == "--cgroup-root")
      st = path(o.cgroupRoot);
    else if (name == "--proc-root")
      st = path(o.procRoot);
    else if (name == "--sys-root")
      st = path(o.sysRoot);
    else if (name == "--tracefs-root")
      st = path(o.tracefsRoot);
    else if (name == "--run-dir")
      st = path(o.runDir);
    else if (name == "--dev-root")
      st = path(o.devRoot);
    else if (name == "--state-dir")
      st = path(o.stateDir);
    else if (name == "--bus") {
      auto v = needValue();
      if (!v) return v.error();
      const std::string& b = v.value();
      if (b != "system" && b != "session" && b != "none" &&
          (b.find(':') == std::string::npos || b.find('=') == std::string::npos))
        return makeError("--bus: '" + b +
                         "' is not system, session, none or a D-Bus address "
                         "(unix:path=...)");
      o.bus = b;
    } else if (name == "--detector") {
      auto v = needValue();
      if (!v) return v.error();
      if (v.value() == "auto")
        o.detector = DetectorKind::Auto;
      else if (v.value() == "tracefs")
        o.detector = DetectorKind::Tracefs;
      else if (v.value() == "procfs")
        o.detector = DetectorKind::Procfs;
      else
        return makeError("--detector: '" + v.value() + "' is not auto, tracefs or procfs");
    } else if (name == "--unit-dropins") {
      auto v = needValue();
      if (!v) return v.error();
      if (v.value() == "auto")
        o.unitDropIns = UnitDropInMode::Auto;
      else if (v.value() == "systemd")
        o.unitDropIns = UnitDropInMode::Systemd;
      else if (v.value() == "files")
        o.unitDropIns = UnitDropInMode::Files;
      else if (v.value() == "off")
        o.unitDropIns = UnitDropInMode::Off;
      else
        return makeError("--unit-dropins: '" + v.value() + "' is not auto, systemd, files or off");
    } else if (name == "--unit-root") {
      st = path(o.unitRoot);
    } else if (name == "--log-level") {
      auto v = needValue();
      if (!v) return v.error();
      if (!parseLogLevel(v.value()))
        return makeError("--log-level: '" + v.value() +
                         "' is not trace, debug, info, warning, error, critical or off");
      o.logLevel = v.value();
    } else if (name == "--assume-shutdown") {
      auto v = needValue();
      if (!v) return v.error();
      if (v.value() == "yes" || v.value() == "1" || v.value() == "true")
        o.assumeShutdown = ShutdownOverride::Yes;
      else if (v.value() == "no" || v.value() == "0" || v.value() == "false")
        o.assumeShutdown = ShutdownOverride::No;
      else
        return makeError("--assume-shutdown: '" + v.value() + "' is not yes or no");
    } else if (name == "--dry-run")
      st = flag(o.dryRun);
    else if (name == "--check-config")
      st = flag(o.checkConfig);
    else if (name == "--foreground")
      st = flag(o.foreground);
    else if (name == "--version")
      st = flag(o.version);
    else if (name == "--observe")
      st = flag(o.observe);
    else if (name == "--help" || name == "-h")
      st = flag(o.help);
    else
      return makeError("unknown option '" + name + "' (see --help)");
    if (!st) return st.error();
  }
  return o;
}

}  // namespace cxiosync
