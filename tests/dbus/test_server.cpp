// SPDX-License-Identifier: GPL-2.0-or-later
// cxiosync-dbus-test-server: BusServer + FakeBackend on a given bus, driven by a poll() loop
// exactly as the daemon drives it (pollSpec/process), plus an optional fake polkit authority.
//
//   --address=ADDR          bus address (required; tests run a private dbus-daemon)
//   --as-uid=N              treat every caller as uid N (BusServerOptions::uidOverride)
//   --polkit=MODE           fake org.freedesktop.PolicyKit1 on its own connection:
//                           allow | deny | challenge | interactive (allow only when the
//                           AllowUserInteraction flag is set) | absent (no fake; default)
//   --fail-reload           the next Reload fails with InvalidArgument
//   --loop-run-dir=DIR      export the loop API over the REAL loop mechanics (LoopManager on
//                           /dev and /sys; records in DIR); needs root and /dev/loop-control
// Signals: SIGTERM/SIGINT stop; SIGUSR1 emits SyncDetected, BoostStarted, BoostEnded and a
// daemon-side PolicyChanged; SIGUSR2 toggles a second boost (ActiveBoosts 1 <-> 2).
// Prints "READY <unique name>" on stdout once the name is owned.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

#include "dbus/bus_server.h"
#include "dbus/sdbus_compat.h"
#include "policy/cli/command_line.h"
#ifdef CXIOSYNC_TEST_SERVER_LOOPS
#include "daemon/app/loop_bus_backend.h"
#include "daemon/app/options.h"
#endif
#include "tests/dbus/fake_backend.h"

using namespace cxiosync;
using namespace cxiosync::dbus;

namespace {

struct ServerArgs {
  std::string address, polkitMode = "absent", loopRunDir;
  std::optional<uint32_t> asUid;
  bool failReload = false;
};

// Exit status 2 (after one line on stderr) on a bad command line.
std::optional<ServerArgs> parseServerArgs(int argc, char** argv) {
  enum : int { kAddress = 256, kAsUid, kPolkit, kFailReload, kLoopRunDir };
  ServerArgs s;
  CommandLine cl(std::vector<std::string>(argv + 1, argv + argc), "",
                 {{"address", required_argument, nullptr, kAddress},
                  {"as-uid", required_argument, nullptr, kAsUid},
                  {"polkit", required_argument, nullptr, kPolkit},
                  {"fail-reload", no_argument, nullptr, kFailReload},
                  {"loop-run-dir", required_argument, nullptr, kLoopRunDir}});
  while (true) {
    auto a = cl.next();
    if (!a) {
      std::fprintf(stderr, "test server: %s\n", a.error().message.c_str());
      return std::nullopt;
    }
    if (!*a) break;
    const CliArg& arg = **a;
    if (arg.id == kAsUid) {
      auto uid = parseCliNumber(arg, 0, UINT32_MAX);
      if (!uid) {
        std::fprintf(stderr, "test server: %s\n", uid.error().message.c_str());
        return std::nullopt;
      }
      s.asUid = static_cast<uint32_t>(*uid);
    } else if (arg.id == kAddress) {
      s.address = *arg.value;
    } else if (arg.id == kPolkit) {
      s.polkitMode = *arg.value;
    } else if (arg.id == kFailReload) {
      s.failReload = true;
    } else if (arg.id == kLoopRunDir) {
      s.loopRunDir = *arg.value;
    } else {
      std::fprintf(stderr, "test server: unexpected argument '%s'\n", arg.name.c_str());
      return std::nullopt;
    }
  }
  if (s.address.empty()) {
    std::fprintf(stderr, "--address is required\n");
    return std::nullopt;
  }
  return s;
}

// The fake org.freedesktop.PolicyKit1 on its own connection.
struct FakePolkit {
  std::unique_ptr<sdbus::IConnection> conn;
  std::unique_ptr<sdbus::IObject> obj;
};

FakePolkit startFakePolkit(const std::string& address, const std::string& polkitMode) {
  FakePolkit p;
  p.conn = sdbus::createSessionBusConnectionWithAddress(address);
  p.obj = compat::createObject(*p.conn, "/org/freedesktop/PolicyKit1/Authority");
  using Subject = sdbus::Struct<std::string, std::map<std::string, sdbus::Variant>>;
  using Reply = sdbus::Struct<bool, bool, std::map<std::string, std::string>>;
  compat::VTableBuilder(*p.obj)
      .method("org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
              [polkitMode](const Subject&, const std::string& action,
                           const std::map<std::string, std::string>&, uint32_t flags,
                           const std::string&) -> Reply {
                if (action.rfind("org.cxiosync1.", 0) != 0) return Reply{false, false, {}};
                if (polkitMode == "allow") return Reply{true, false, {}};
                if (polkitMode == "challenge") return Reply{false, true, {}};
                if (polkitMode == "interactive")
                  return Reply{(flags & 1) != 0, (flags & 1) == 0, {}};
                return Reply{false, false, {}};
              })
      .finish();
  compat::requestName(*p.conn, "org.freedesktop.PolicyKit1");
  return p;
}

// SIGUSR1: one of each signal; SIGUSR2: a second boost on/off. false on SIGTERM/SIGINT.
bool handleSignals(int sfd, BusServer& server, testing::FakeBackend& backend) {
  struct signalfd_siginfo si {};
  while (read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) return false;
    if (si.ssi_signo == SIGUSR1) {
      auto syncers = backend.listSyncers();
      auto boosts = backend.listBoosts();
      server.syncDetected(syncers.at(0));
      server.boostStarted(boosts.at(0));
      server.boostEnded(boosts.at(0), "syncers-left");
      server.policyChanged("", "", "", "config");
    }
    if (si.ssi_signo == SIGUSR2) {
      backend.extraBoost = !backend.extraBoost;
      server.propertiesMayHaveChanged();
    }
  }
  return true;
}

// The poll() loop, as the daemon drives a BusServer. Returns the exit status.
int serve(BusServer& server, testing::FakeBackend& backend, int sfd, sdbus::IConnection* polkit) {
  for (;;) {
    PollSpec spec = server.pollSpec();
    // Slots left at fd -1 are skipped by poll(2); the eventFds are sdbus-c++ 2.x's.
    struct pollfd fds[5] = {{spec.fd, static_cast<short>(spec.events), 0},
                            {sfd, POLLIN, 0},
                            {spec.eventFd, POLLIN, 0},
                            {-1, 0, 0},
                            {-1, 0, 0}};
    int timeout = spec.timeoutMs;
    if (polkit) {
      auto pd = compat::pollData(*polkit);
      fds[3] = {pd.fd, pd.events, 0};
      fds[4] = {pd.eventFd, POLLIN, 0};
      int t = pd.timeoutMs();
      if (t >= 0 && (timeout < 0 || t < timeout)) timeout = t;
    }
    int r = poll(fds, 5, timeout);
    if (r < 0 && errno != EINTR) return 1;
    if ((fds[1].revents & POLLIN) && !handleSignals(sfd, server, backend)) return 0;
    if (!server.process()) return 1;
    if (polkit) {
      while (compat::processPending(*polkit)) {
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto args = parseServerArgs(argc, argv);
  if (!args) return 2;
  BusServerOptions options;
  testing::FakeBackend backend;
  if (args->asUid) options.uidOverride = *args->asUid;
  backend.failNextReload = args->failReload;
  options.bus = BusTarget::at(args->address);
  options.log = [](BusLogLevel level, const std::string& message) {
    const char* tag = level == BusLogLevel::Warning  ? "warning"
                      : level == BusLogLevel::Notice ? "notice"
                                                     : "info";
    std::fprintf(stderr, "%s: %s\n", tag, message.c_str());
  };

  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

  // The fake polkit first, so it is on the bus before anyone can call us.
  FakePolkit polkit;
  if (args->polkitMode != "absent") polkit = startFakePolkit(args->address, args->polkitMode);

#ifdef CXIOSYNC_TEST_SERVER_LOOPS
  std::unique_ptr<cxiosync::LoopBus> loops;
  if (!args->loopRunDir.empty()) {
    cxiosync::Options daemonOptions;
    daemonOptions.runDir = args->loopRunDir;
    loops = cxiosync::LoopBus::create(daemonOptions);
    if (!loops) {
      std::fprintf(stderr, "test server: loop devices unavailable\n");
      return 3;
    }
    options.loopBackend = loops->backend();
  }
#else
  if (!args->loopRunDir.empty()) {
    std::fprintf(stderr, "test server: built without the loop backend\n");
    return 3;
  }
#endif
  auto server = BusServer::create(backend, options);
  if (!server) {
    std::fprintf(stderr, "test server: %s\n", server.error().message.c_str());
    return 1;
  }
  std::printf("READY %s\n", (*server)->uniqueName().c_str());
  std::fflush(stdout);
  return serve(**server, backend, sfd, polkit.conn.get());
}
