// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/app/options.h"

#include "daemon/log/logging.h"
#include "policy/cli/command_line.h"
#include "policy/config/values.h"

namespace cxiosync {

std::string usageText() {
  return R"(Usage: cxiosyncd [OPTIONS]

Removes the sync()/io.max priority inversion: while a sync from outside a write-limited
cgroup waits on that cgroup's throttled writeback, the limit is lifted, then restored.

Options:
  --config=PATH          config directory (cxiosync.yaml + cxiosync.d/*.yaml; default
                         /etc/cxiosync, built-in defaults when absent) or one YAML file
  --check-config [PATH]  validate the configuration (PATH, else --config's) and exit
                         (0 valid, 6 invalid; no /etc/cxiosync: the built-in defaults)
  --cgroup-root=DIR      cgroup2 mount (default /sys/fs/cgroup)
  --proc-root=DIR        procfs (default /proc)
  --sys-root=DIR         sysfs (default /sys)
  --tracefs-root=DIR     tracefs (default /sys/kernel/tracing)
  --run-dir=DIR          boost journal, metrics and loop device records, a tmpfs
                         (default /run/cxiosync)
  --dev-root=DIR         device nodes: /dev/loop-control, /dev/loopN (default /dev)
  --state-dir=DIR        persistent runtime policy set through D-Bus
                         (default /var/lib/cxiosync)
  --cgroupns=FILE        enter the cgroup namespace FILE first (a container: the host's,
                         /proc/1/ns/cgroup with the host's PIDs; needs CAP_SYS_ADMIN)
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

Exit status: 0 ok, 1 runtime failure, 2 bad command line, 3 lost the D-Bus connection
(boosts restored; systemd restarts it), 5 the host lacks what it needs (no cgroup2 io
controller, or detector tracefs without tracefs), 6 invalid configuration.
)";
}

namespace {

// Option ids: a short option's letter, or a value above any letter for long-only ones.
enum OptionId : int {
  kConfig = 256,
  kCheckConfig,
  kCgroupRoot,
  kProcRoot,
  kSysRoot,
  kTracefsRoot,
  kRunDir,
  kDevRoot,
  kStateDir,
  kCgroupNs,
  kBus,
  kDetector,
  kUnitDropIns,
  kUnitRoot,
  kDryRun,
  kForeground,
  kLogLevel,
  kAssumeShutdown,
  kObserve,
  kVersion,
};

std::vector<option> longOptions() {
  return {
      {"config", required_argument, nullptr, kConfig},
      {"check-config", no_argument, nullptr, kCheckConfig},
      {"cgroup-root", required_argument, nullptr, kCgroupRoot},
      {"proc-root", required_argument, nullptr, kProcRoot},
      {"sys-root", required_argument, nullptr, kSysRoot},
      {"tracefs-root", required_argument, nullptr, kTracefsRoot},
      {"run-dir", required_argument, nullptr, kRunDir},
      {"dev-root", required_argument, nullptr, kDevRoot},
      {"state-dir", required_argument, nullptr, kStateDir},
      {"cgroupns", required_argument, nullptr, kCgroupNs},
      {"bus", required_argument, nullptr, kBus},
      {"detector", required_argument, nullptr, kDetector},
      {"unit-dropins", required_argument, nullptr, kUnitDropIns},
      {"unit-root", required_argument, nullptr, kUnitRoot},
      {"dry-run", no_argument, nullptr, kDryRun},
      {"foreground", no_argument, nullptr, kForeground},
      {"log-level", required_argument, nullptr, kLogLevel},
      {"assume-shutdown", required_argument, nullptr, kAssumeShutdown},
      {"observe", no_argument, nullptr, kObserve},
      {"version", no_argument, nullptr, kVersion},
      {"help", no_argument, nullptr, 'h'},
  };
}

// The directory options: where each one's value goes.
std::string* pathTarget(Options& o, int id) {
  switch (id) {
    case kConfig:
      return &o.configPath;
    case kCgroupRoot:
      return &o.cgroupRoot;
    case kProcRoot:
      return &o.procRoot;
    case kSysRoot:
      return &o.sysRoot;
    case kTracefsRoot:
      return &o.tracefsRoot;
    case kRunDir:
      return &o.runDir;
    case kDevRoot:
      return &o.devRoot;
    case kStateDir:
      return &o.stateDir;
    case kCgroupNs:
      return &o.cgroupNamespace;
    case kUnitRoot:
      return &o.unitRoot;
    default:
      return nullptr;
  }
}

bool* flagTarget(Options& o, int id) {
  switch (id) {
    case kCheckConfig:
      return &o.checkConfig;
    case kDryRun:
      return &o.dryRun;
    case kForeground:
      return &o.foreground;
    case kObserve:
      return &o.observe;
    case kVersion:
      return &o.version;
    case 'h':
      return &o.help;
    default:
      return nullptr;
  }
}

Result<UnitDropInMode> parseUnitDropIns(const std::string& v) {
  if (v == "auto") return UnitDropInMode::Auto;
  if (v == "systemd") return UnitDropInMode::Systemd;
  if (v == "files") return UnitDropInMode::Files;
  if (v == "off") return UnitDropInMode::Off;
  return makeError("'" + v + "' is not auto, systemd, files or off");
}

Status checkBus(const std::string& b) {
  if (b == "system" || b == "session" || b == "none") return Ok{};
  if (b.find(':') != std::string::npos && b.find('=') != std::string::npos) return Ok{};
  return makeError("'" + b + "' is not system, session, none or a D-Bus address (unix:path=...)");
}

// One option with a value that is not a directory.
Status applyValue(Options& o, const CliArg& a) {
  const std::string& v = *a.value;
  Status st = Ok{};
  switch (a.id) {
    case kBus:
      st = checkBus(v);
      if (st) o.bus = v;
      break;
    case kDetector:
      if (auto d = parseDetector(v))
        o.detector = *d;
      else
        st = d.error();
      break;
    case kUnitDropIns:
      if (auto m = parseUnitDropIns(v))
        o.unitDropIns = *m;
      else
        st = m.error();
      break;
    case kLogLevel:
      if (parseLogLevel(v))
        o.logLevel = v;
      else
        st = makeError("'" + v + "' is not trace, debug, info, warning, error, critical or off");
      break;
    case kAssumeShutdown:
      if (auto b = parseBoolean(v))
        o.assumeShutdown = *b ? ShutdownOverride::Yes : ShutdownOverride::No;
      else
        st = makeError("'" + v + "' is not yes or no");
      break;
  }
  if (!st) return cliValueError(a, st.error().message);
  return Ok{};
}

}  // namespace

Result<Options> parseOptions(const std::vector<std::string>& args) {
  Options o;
  std::vector<std::string> positional;
  bool configGiven = false;
  CommandLine cl(args, "h", longOptions());
  while (true) {
    auto a = cl.next();
    if (!a) return makeError(a.error().message + " (see --help)");
    if (!*a) break;
    const CliArg& arg = **a;
    if (arg.id == CliArg::kPositional) {
      positional.push_back(arg.name);
      continue;
    }
    if (bool* flag = flagTarget(o, arg.id)) {
      *flag = true;
      continue;
    }
    if (arg.value->empty()) return makeError("option " + arg.name + " needs a non-empty value");
    if (std::string* path = pathTarget(o, arg.id)) {
      *path = *arg.value;
      configGiven = configGiven || arg.id == kConfig;
      continue;
    }
    if (auto st = applyValue(o, arg); !st) return st.error();
  }
  for (const auto& r : cl.rest()) positional.push_back(r);
  // `cxiosyncd --check-config PATH` (the documented form; --config=PATH works too).
  if (o.checkConfig && positional.size() == 1 && !configGiven) {
    o.configPath = positional[0];
    positional.clear();
  }
  if (!positional.empty())
    return makeError("unexpected argument '" + positional[0] + "' (see --help)");
  return o;
}

}  // namespace cxiosync
