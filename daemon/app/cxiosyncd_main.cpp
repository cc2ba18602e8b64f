// SPDX-License-Identifier: GPL-2.0-or-later
// cxiosyncd: thin main. Flags -> logging -> config -> Daemon::run().
#include <fcntl.h>
#include <sched.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cxiosync_version.h"
#include "daemon/app/bus_backend.h"
#include "daemon/app/loop_bus_backend.h"
#include "daemon/app/observe.h"
#include "daemon/app/options.h"
#include "daemon/app/preflight.h"
#include "daemon/core/daemon.h"
#include "daemon/core/notify.h"
#include "daemon/kernel/fs.h"
#include "daemon/log/logging.h"
#include "daemon/sources/config_loader.h"
#include "policy/config/defaults.h"

using namespace cxiosync;

namespace {

// --cgroupns=FILE (options.h): setns(2) into that cgroup namespace before any thread exists
// (setns of a cgroup namespace changes only the calling thread) and before anything reads a
// cgroup path. False, with one line on stderr, when it cannot: a daemon left in a container's
// own namespace would start and see no syncer outside it, so it must not start.
bool enterCgroupNamespace(const std::string& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid() || ::setns(fd.get(), CLONE_NEWCGROUP) != 0) {
    int e = errno;
    std::fprintf(stderr, "cxiosyncd: --cgroupns=%s: %s: %s%s\n", file.c_str(),
                 fd.valid() ? "setns" : "open", std::strerror(e),
                 e == EPERM || e == EACCES ? " (needs CAP_SYS_ADMIN, and CAP_SYS_PTRACE to open "
                                             "another process's namespace)"
                                           : "");
    return false;
  }
  return true;
}

// The configuration the daemon would run with: PATH's, or the built-in defaults when the
// default /etc/cxiosync does not exist at all (what the daemon starts with, so --check-config
// says so rather than failing).
Result<Config> configOrDefaults(const Options& o) {
  auto cfg = checkConfigPath(o.configPath);
  if (!cfg && cfg.error().code == ENOENT && o.configPath == Options{}.configPath)
    return Config{builtinGlobalSettings(), {}, {}, {}};
  return cfg;
}

// Issue 27: a host where nothing can work is refused before "ready" (preflight.h).
Status refuseUnsupportedHost(const Options& o, const Config& cfg) {
  if (auto st = checkCgroupRoot(o.cgroupRoot); !st) return st;
  if (o.detector.value_or(cfg.global.detector) == DetectorKind::Tracefs)
    return checkTracefsRoot(o.tracefsRoot);
  return Ok{};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = parseOptions(args);
  if (!parsed) {
    std::fprintf(stderr, "cxiosyncd: %s\n", parsed.error().message.c_str());
    return kExitUsage;
  }
  const Options& o = parsed.value();
  if (o.help) {
    std::fputs(usageText().c_str(), stdout);
    return kExitOk;
  }
  if (o.version) {
    std::printf("cxiosyncd %s\n", CXIOSYNC_VERSION);
    return kExitOk;
  }
  if (o.checkConfig) {
    auto cfg = configOrDefaults(o);
    if (!cfg) {
      std::fprintf(stderr, "cxiosyncd: invalid configuration: %s\n", cfg.error().message.c_str());
      return kExitBadConfig;
    }
    std::printf("configuration OK (%zu file(s)%s)\n", cfg->files.size(),
                cfg->files.empty() ? ", built-in defaults" : "");
    for (const auto& f : cfg->files) std::printf("  %s\n", f.c_str());
    return kExitOk;
  }

  if (!o.cgroupNamespace.empty() && !enterCgroupNamespace(o.cgroupNamespace)) return kExitFailure;

  if (!o.observe) {
    // Block the signals the event loop reads from a signalfd before any thread exists (the
    // async logger's thread inherits the mask; otherwise SIGTERM could land there and kill
    // the process without the restore-all).
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
    sigprocmask(SIG_BLOCK, &set, nullptr);
  }

  LogSetup ls;
  if (o.logLevel) ls.level = *parseLogLevel(*o.logLevel);
  ls.target = o.foreground ? LogTarget::Stderr : LogTarget::Auto;
  setupLogging(ls);

  auto cfg = configOrDefaults(o);
  if (!cfg) {
    spdlog::critical("invalid configuration: {}", cfg.error().message);
    shutdownLogging();
    return kExitBadConfig;
  }

  if (o.observe) {
    ObserveOptions obs;
    obs.roots.cgroup = o.cgroupRoot;
    obs.roots.proc = o.procRoot;
    obs.roots.sys = o.sysRoot;
    obs.roots.tracefs = o.tracefsRoot;
    obs.settings = cfg->global;
    if (o.detector) obs.settings.detector = *o.detector;
    shutdownLogging();
    return runObserve(obs);
  }

  if (auto st = refuseUnsupportedHost(o, *cfg); !st) {
    spdlog::critical("cannot start: {}", st.error().message);
    Notifier().status("cannot start: " + st.error().message);
    shutdownLogging();
    return kExitUnsupported;
  }

  int rc = kExitFailure;
  {
    auto daemon = Daemon::create(o, std::move(cfg.value()));
    if (!daemon) {
      spdlog::critical("cannot start: {}", daemon.error().message);
    } else {
      // Loop devices: the manager reconciles its records with the kernel before READY=1.
      auto loops = LoopBus::create(o);
      // Runtime policy + D-Bus API (org.cxiosync1) on the daemon's loop, before READY=1.
      // Declared after the daemon and the loops: destroyed first.
      auto bus = DaemonBus::attach(*daemon.value(), o, loops ? loops->backend() : nullptr);
      rc = daemon.value()->run();
    }
  }
  shutdownLogging();
  return rc;
}
