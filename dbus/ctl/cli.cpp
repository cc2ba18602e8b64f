// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/cli.h"

#include <pwd.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "cxiosync_version.h"
#include "dbus/client.h"
#include "dbus/ctl/format.h"
#include "dbus/ctl/loop_cli.h"
#include "dbus/ctl/polkit_agent.h"
#include "dbus/ctl/render.h"
#include "dbus/ctl/systemd_units.h"
#include "dbus/ctl/unit_name.h"
#include "dbus/validate.h"
#include "policy/blockdev/loop_vocab.h"
#include "policy/cli/command_line.h"
#include "policy/config/values.h"
#include "policy/config/yaml_config.h"

namespace cxiosync::ctl {

namespace {

struct VerbSpec {
  size_t args;
  const char* synopsis;
};

const std::map<std::string, VerbSpec>& verbs() {
  static const std::map<std::string, VerbSpec> kVerbs = {
      {"status", {0, "status"}},
      {"list", {0, "list"}},
      {"show", {1, "show CG"}},
      {"isolate", {2, "isolate CG on|off [--runtime]"}},
      {"boost", {2, "boost CG allow|deny [--runtime]"}},
      {"ceiling", {2, "ceiling CG inherit|max|RATE [--runtime]"}},
      {"tenant", {2, "tenant CG on|off [--runtime]"}},
      {"reset", {1, "reset CG"}},
      {"boosts", {0, "boosts"}},
      {"syncers", {0, "syncers"}},
      {"monitor", {0, "monitor"}},
      {"metrics", {0, "metrics"}},
      {"reload", {0, "reload"}},
      {"check-config", {1, "check-config FILE"}},
      {"loop", {1, "loop add|list|show|set|detach ..."}},
      {"version", {0, "version"}},
      {"help", {0, "help"}},
  };
  return kVerbs;
}

Error invalid(std::string m) {
  return makeError(std::move(m), EINVAL);
}

using output::Cell;

// The "unit" of a CG argument given as a unit name (null when it was a path).
Cell unitCell(const ResolvedCgroup& cg, const std::string& arg) {
  return cg.fromUnit ? Cell::text(arg) : Cell::null();
}

uint64_t nowRealtimeUsec() {
  struct timeval tv {};
  gettimeofday(&tv, nullptr);
  return static_cast<uint64_t>(tv.tv_sec) * 1000000u + static_cast<uint64_t>(tv.tv_usec);
}

class Runner {
 public:
  Runner(const Invocation& inv, const Io& io) : inv_(inv), opt_(inv.options), io_(io) {}

  int run();

 private:
  bool json() const { return opt_.json != JsonMode::Off; }
  void printJson(const Json& j) const { io_.out(j.dump(opt_.json == JsonMode::Pretty) + "\n"); }
  RenderStyle style() const { return RenderStyle{!opt_.noLegend, io_.color, nowRealtimeUsec()}; }
  void say(const std::string& line) const {
    if (!opt_.quiet) io_.out(line + "\n");
  }
  int fail(int code, const std::string& message) const {
    io_.err(message + "\n");
    return code;
  }
  // Maps a client failure to an exit code (and prints it).
  int failCall(const dbus::ClientError& e) const;

  dbus::Client& client();
  Result<ResolvedCgroup> cgroupArg(const std::string& arg) const;

  int status();
  int list();
  int show();
  int change();
  int boosts();
  int syncers();
  int monitor();
  int metrics();
  int reload();
  int checkConfig();
  int version();

  const Invocation& inv_;
  const CliOptions& opt_;
  const Io& io_;
  std::unique_ptr<dbus::Client> client_;
};

int Runner::failCall(const dbus::ClientError& e) const {
  const std::string& n = e.name();
  if (e.daemonNotRunning()) {
    return fail(kExitNotRunning,
                "cxiosyncd is not running on the " + opt_.bus.describe() + " bus (" + n + ")");
  }
  if (e.noBus()) return fail(kExitNotRunning, e.what());
  std::string msg = e.what();
  if (n == "org.cxiosync1.Error.InvalidArgument") return fail(kExitInvalidArgs, msg);
  if (n == "org.cxiosync1.Error.AccessDenied" || n == "org.freedesktop.DBus.Error.AccessDenied" ||
      n == "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired") {
    return fail(kExitPermission, msg);
  }
  if (n == "org.cxiosync1.Error.NoSuchCgroup") return fail(kExitFailure, msg);
  if (n.rfind("org.cxiosync1.Error.", 0) == 0) return fail(kExitFailure, msg);
  return fail(kExitFailure, "Call failed: " + msg + " (" + n + ")");
}

dbus::Client& Runner::client() {
  if (!client_) client_ = dbus::Client::connect(opt_.bus);
  return *client_;
}

Result<ResolvedCgroup> Runner::cgroupArg(const std::string& arg) const {
  // systemd (the system manager) places the units of the daemon on the system bus; a daemon on
  // another bus (tests, a development instance over a fake tree) gets the pure mapping.
  // --user: that user's manager on its private socket (the caller's own, or any as root).
  std::unique_ptr<UnitLookup> systemd;
  if (opt_.bus.kind == dbus::BusTarget::Kind::System) {
    systemd = opt_.userUid ? userManagerLookup(*opt_.userUid) : systemdUnitLookup();
  }
  auto r = opt_.userUid ? resolveUserCgroupArg(arg, *opt_.userUid, systemd.get())
                        : resolveCgroupArg(arg, systemd.get());
  if (r && !r->note.empty() && !opt_.quiet) io_.err(r->note + "\n");
  return r;
}

// A CG argument that could not be resolved: EINVAL is a bad argument (2); a unit without a
// cgroup (not active, not found) or a systemd failure is a failure (1), as NoSuchCgroup is.
int cgroupArgExit(const Error& e) {
  return e.code == EINVAL ? kExitInvalidArgs : kExitFailure;
}

int Runner::run() {
  const std::string& v = inv_.verb;
  try {
    if (v == "help") {
      if (json()) return fail(kExitInvalidArgs, "help has no JSON output");
      io_.out(usage());
      return kExitOk;
    }
    if (v == "version") return version();
    if (v == "check-config") return checkConfig();
    if (v == "status") return status();
    if (v == "list") return list();
    if (v == "show") return show();
    if (v == "isolate" || v == "boost" || v == "ceiling" || v == "tenant" || v == "reset")
      return change();
    if (v == "boosts") return boosts();
    if (v == "syncers") return syncers();
    if (v == "monitor") return monitor();
    if (v == "metrics") return metrics();
    if (v == "reload") return reload();
    if (v == "loop") {
      PolkitAgent agent(!opt_.noAskPassword && opt_.bus.kind == dbus::BusTarget::Kind::System &&
                        inv_.args[0] != "list" && inv_.args[0] != "show");
      return runLoop(inv_, io_, [this]() -> dbus::Client& { return client(); });
    }
    return fail(kExitInvalidArgs, "Unknown verb '" + v + "'");
  } catch (const dbus::ClientError& e) {
    return failCall(e);
  } catch (const std::exception& e) {
    return fail(kExitFailure, std::string("Failed: ") + e.what());
  }
}

int Runner::status() {
  try {
    auto& c = client();
    if (!c.daemonRunning()) {
      if (json()) {
        printJson(recordJson({{"running", Cell::boolean(false)}}));
      } else {
        say("○ cxiosyncd is not running (bus: " + opt_.bus.describe() + ")");
      }
      return kExitNotRunningLsb;
    }
    auto s = c.status();
    if (json()) {
      printJson(statusJson(s));
    } else {
      io_.page(statusText(s, style()));
    }
    return kExitOk;
  } catch (const dbus::ClientError& e) {
    if (e.daemonNotRunning()) {
      if (json()) {
        printJson(recordJson({{"running", Cell::boolean(false)}}));
      } else {
        say("○ cxiosyncd is not running (bus: " + opt_.bus.describe() + ")");
      }
      return kExitNotRunningLsb;
    }
    io_.err(std::string(e.what()) + "\n");
    // LSB: 4 = status unknown (cannot reach the bus, or not allowed to ask).
    return kExitPermission;
  }
}

int Runner::list() {
  auto list = client().listCgroups();
  if (json()) {
    printJson(cgroupsJson(list));
  } else {
    io_.page(cgroupsText(list, style()));
  }
  return kExitOk;
}

int Runner::show() {
  auto cg = cgroupArg(inv_.args[0]);
  if (!cg) return fail(cgroupArgExit(cg.error()), cg.error().message);
  auto info = client().showCgroup(cg->path);
  if (json()) {
    Json j = cgroupJson(info);
    j.set("unit", Json(unitCell(*cg, inv_.args[0]).json()));
    printJson(j);
  } else {
    std::string text = cgroupText(info, style());
    if (cg->fromUnit) text = inv_.args[0] + " → " + info.path + "\n" + text;
    io_.page(text);
  }
  return kExitOk;
}

int Runner::change() {
  const std::string& v = inv_.verb;
  auto cg = cgroupArg(inv_.args[0]);
  if (!cg) return fail(cgroupArgExit(cg.error()), cg.error().message);
  if (opt_.runtime && v == "reset") {
    return fail(kExitInvalidArgs, "--runtime does not apply to reset (it drops both layers)");
  }
  dbus::ChangeRequest req{opt_.runtime, !opt_.noAskPassword};
  PolkitAgent agent(req.interactive && opt_.bus.kind == dbus::BusTarget::Kind::System);
  // The values as a config file spells them (policy/config/values.h): one syntax everywhere.
  std::string knob, value, shown;
  if (v == "isolate") {
    auto on = parseBoolean(inv_.args[1]);
    if (!on) return fail(kExitInvalidArgs, "isolate: " + on.error().message);
    knob = "sync_isolation";
    value = *on ? "on" : "off";
    client().setIsolation(cg->path, *on, req);
  } else if (v == "boost") {
    auto p = dbus::parseBoostPermission(inv_.args[1]);
    if (!p) return fail(kExitInvalidArgs, "boost: " + p.error().message);
    knob = "boost";
    value = dbus::boostPermissionName(*p);
    client().setBoostPolicy(cg->path, value, req);
  } else if (v == "ceiling") {
    auto c = dbus::parseBoostCeiling(inv_.args[1]);
    if (!c) return fail(kExitInvalidArgs, "ceiling: " + c.error().message);
    knob = "boost_ceiling";
    value = formatBoostCeiling(*c);
    if (c->kind == BoostCeiling::Kind::Bytes) shown = formatRate(c->bytesPerSecond);
    client().setBoostCeiling(cg->path, value, req);
  } else if (v == "tenant") {
    auto on = parseBoolean(inv_.args[1]);
    if (!on) return fail(kExitInvalidArgs, "tenant: " + on.error().message);
    knob = "tenant";
    value = *on ? "on" : "off";
    client().setTenant(cg->path, *on, req);
  } else {
    client().resetPolicy(cg->path, req);
  }
  if (json()) {
    std::vector<std::pair<std::string, Cell>> fields = {{"cgroup", Cell::text(cg->path)},
                                                        {"unit", unitCell(*cg, inv_.args[0])}};
    if (knob.empty()) {
      fields.emplace_back("reset", Cell::boolean(true));
    } else {
      fields.emplace_back("knob", Cell::text(knob));
      fields.emplace_back("value", Cell::text(value));
      fields.emplace_back("runtime", Cell::boolean(opt_.runtime));
    }
    printJson(recordJson(std::move(fields)));
  } else if (knob.empty()) {
    say("Reset the runtime policy of " + cg->path + ".");
  } else {
    say("Set " + knob + "=" + (shown.empty() ? value : shown) + " on " + cg->path +
        (opt_.runtime ? " (runtime: until reboot)." : "."));
  }
  return kExitOk;
}

int Runner::boosts() {
  auto list = client().listBoosts();
  if (json()) {
    printJson(boostsJson(list));
  } else {
    io_.page(boostsText(list, style()));
  }
  return kExitOk;
}

int Runner::syncers() {
  auto list = client().listSyncers();
  if (json()) {
    printJson(syncersJson(list));
  } else {
    io_.page(syncersText(list, style()));
  }
  return kExitOk;
}

int Runner::monitor() {
  auto& c = client();
  if (!c.daemonRunning()) {
    return fail(kExitNotRunning, "cxiosyncd is not running on the " + opt_.bus.describe() + " bus");
  }
  c.monitor(
      [&](const dbus::EventView& e) {
        if (json()) {
          printJson(eventJson(e));
        } else {
          io_.out(eventText(e) + "\n");
        }
      },
      io_.stopFd,
      [&] {
        if (!opt_.quiet) io_.err("Monitoring cxiosyncd; press Ctrl-C to stop.\n");
      });
  return kExitOk;
}

int Runner::metrics() {
  std::string text = client().metrics();
  if (json()) {
    auto j = metricsJson(text);
    if (!j) return fail(kExitFailure, "Cannot produce JSON: " + j.error().message);
    printJson(*j);
  } else {
    io_.page(text);
  }
  return kExitOk;
}

int Runner::reload() {
  PolkitAgent agent(!opt_.noAskPassword && opt_.bus.kind == dbus::BusTarget::Kind::System);
  client().reload(dbus::ChangeRequest{false, !opt_.noAskPassword});
  if (json()) {
    printJson(recordJson({{"reloaded", Cell::boolean(true)}}));
  } else {
    say("Configuration reloaded.");
  }
  return kExitOk;
}

int Runner::checkConfig() {
  const std::string& path = inv_.args[0];
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(kExitBadConfig, "Cannot read " + path + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  Status st = cxiosync::checkConfig({ConfigText{path, text.str()}});
  if (json()) {
    printJson(recordJson({{"file", Cell::bytes(path)},
                          {"valid", Cell::boolean(st.ok())},
                          {"error", st.ok() ? Cell::null() : Cell::text(st.error().message)}}));
    return st.ok() ? kExitOk : kExitBadConfig;
  }
  if (!st) return fail(kExitBadConfig, st.error().message);
  say(path + ": OK");
  return kExitOk;
}

int Runner::version() {
  std::string daemon;
  bool reachable = false;
  try {
    auto& c = client();
    if (c.daemonRunning()) {
      daemon = c.version();
      reachable = true;
    }
  } catch (const dbus::ClientError&) {
    // The client's own version is still worth printing.
  }
  if (json()) {
    printJson(recordJson({{"cxiosyncctl", Cell::text(CXIOSYNC_VERSION)},
                          {"cxiosyncd", reachable ? Cell::text(daemon) : Cell::null()}}));
  } else {
    io_.out(std::string("cxiosyncctl ") + CXIOSYNC_VERSION + "\n");
    if (!opt_.quiet)
      io_.out("cxiosyncd   " + (reachable ? daemon : std::string("(not running)")) + "\n");
  }
  return kExitOk;
}

}  // namespace

std::string usage() {
  std::string out =
      "cxiosyncctl [OPTIONS...] COMMAND ...\n\n"
      "Query and control cxiosyncd, the sync() priority-inversion guard.\n\n"
      "Commands:\n";
  const char* order[] = {"status",  "list",    "show",   "isolate",      "boost",
                         "ceiling", "tenant",  "reset",  "boosts",       "syncers",
                         "monitor", "metrics", "reload", "check-config", "version"};
  for (const char* v : order) out += "  " + std::string(verbs().at(v).synopsis) + "\n";
  out += loopUsage();
  out +=
      "\nCG is a cgroup path (/backup.slice) or a unit name: a slice (backup.slice,\n"
      "a-b.slice), or a service or scope (foo.service: its cgroup, asked from systemd).\n"
      "With --user, unit names are the user manager's (user@UID.service's) units.\n\n"
      "Options:\n"
      "  -h --help                 Show this help\n"
      "     --version              Same as the version command\n"
      "     --json=pretty|short|off  JSON output (fails rather than printing text)\n"
      "     --no-pager             Do not pipe output into a pager\n"
      "     --no-legend            Do not print headers and footers\n"
      "  -q --quiet                Suppress informational output\n"
      "     --no-ask-password      Do not ask for a password (polkit)\n"
      "     --runtime              isolate/boost/ceiling/tenant: until reboot only\n"
      "     --bus=system|session|ADDRESS  Which bus to talk on (default: system)\n"
      "     --user[=UID|USER]      CG names a unit of this user's manager (default: you)\n"
      "\nExit status: 0 ok, 1 failure, 2 invalid arguments, 4 permission denied,\n"
      "6 invalid configuration (check-config), 7 daemon not running;\n"
      "status: 0 running, 3 not running.\n";
  return out;
}

namespace {

enum CtlOptionId : int {
  kOptVersion = 256,
  kOptJson,
  kOptNoPager,
  kOptNoLegend,
  kOptNoAskPassword,
  kOptRuntime,
  kOptBus,
  kOptUser,
  kOptReadOnly,
  kOptAutoclear,
  kOptPartscan,
  kOptAll,
  kOptCapacity,
  kOptForce,
  kOptDirectIo,
  kOptOffset,
  kOptSize,
  kOptBlockSize,
  kOptBackend,
  kOptWorkers,
  kOptQueueDepth,
  kOptNbdTimeout,
  kOptServerCgroup,
};

std::vector<option> ctlOptions() {
  return {
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, kOptVersion},
      {"json", optional_argument, nullptr, kOptJson},  // bare --json: pretty
      {"no-pager", no_argument, nullptr, kOptNoPager},
      {"no-legend", no_argument, nullptr, kOptNoLegend},
      {"quiet", no_argument, nullptr, 'q'},
      {"no-ask-password", no_argument, nullptr, kOptNoAskPassword},
      {"runtime", no_argument, nullptr, kOptRuntime},
      {"bus", required_argument, nullptr, kOptBus},
      {"user", optional_argument, nullptr, kOptUser},
      {"read-only", no_argument, nullptr, kOptReadOnly},
      {"autoclear", no_argument, nullptr, kOptAutoclear},
      {"partscan", no_argument, nullptr, kOptPartscan},
      {"all", no_argument, nullptr, kOptAll},
      {"capacity", no_argument, nullptr, kOptCapacity},
      {"force", no_argument, nullptr, kOptForce},
      {"direct-io", optional_argument, nullptr, kOptDirectIo},  // losetup: bare means on
      {"offset", required_argument, nullptr, kOptOffset},
      {"size", required_argument, nullptr, kOptSize},
      {"block-size", required_argument, nullptr, kOptBlockSize},
      {"backend", required_argument, nullptr, kOptBackend},
      {"workers", required_argument, nullptr, kOptWorkers},
      {"queue-depth", required_argument, nullptr, kOptQueueDepth},
      {"nbd-timeout", required_argument, nullptr, kOptNbdTimeout},
      {"server-cgroup", required_argument, nullptr, kOptServerCgroup},
  };
}

Result<JsonMode> parseJsonMode(const CliArg& a) {
  if (!a.value || *a.value == "pretty") return JsonMode::Pretty;
  if (*a.value == "short") return JsonMode::Short;
  if (*a.value == "off") return JsonMode::Off;
  return invalid("--json takes pretty, short or off, not '" + *a.value + "'");
}

// Sizes as everywhere in cxiosync (policy parseSize: "4096", "1M", "1.5G", "512 KiB").
Result<uint64_t> sizeArg(const CliArg& a) {
  auto n = parseSize(*a.value);
  if (!n) return cliValueError(a, n.error().message);
  return *n;
}

Result<uint32_t> blockSizeArg(const CliArg& a) {
  auto n = sizeArg(a);
  if (!n) return n.error();
  if (*n == 0 || !validBlockSize(*n))
    return cliValueError(a, "'" + *a.value + "' is not a power of two " +
                                std::to_string(kMinBlockSize) + ".." +
                                std::to_string(kMaxBlockSize));
  return static_cast<uint32_t>(*n);
}

// --user: the caller; --user=1000 or --user=alice (names as getpwnam knows them).
Result<uint32_t> userArg(const CliArg& a) {
  if (!a.value) return static_cast<uint32_t>(::getuid());
  const std::string& v = *a.value;
  if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
    errno = 0;
    unsigned long long n = std::strtoull(v.c_str(), nullptr, 10);
    // (uid_t)-1 is "no uid" to every system call.
    if (errno == 0 && n < 0xffffffffULL) return static_cast<uint32_t>(n);
    return cliValueError(a, "'" + v + "' is not a uid");
  }
  if (const passwd* pw = ::getpwnam(v.c_str())) return static_cast<uint32_t>(pw->pw_uid);
  return cliValueError(a, "no user '" + v + "'");
}

// A count in decimal within [min, max] ("4"; not "4x", "-1", "0x10").
Result<uint32_t> countArg(const CliArg& a, uint32_t min, uint32_t max) {
  const std::string& v = *a.value;
  uint64_t n = 0;
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
    return cliValueError(a, "'" + v + "' is not a number");
  n = std::stoull(v);
  if (n < min || n > max)
    return cliValueError(
        a, "'" + v + "' is not between " + std::to_string(min) + " and " + std::to_string(max));
  return static_cast<uint32_t>(n);
}

bool* flagTarget(CliOptions& o, int id) {
  switch (id) {
    case 'h':
      return &o.help;
    case kOptNoPager:
      return &o.noPager;
    case kOptNoLegend:
      return &o.noLegend;
    case 'q':
      return &o.quiet;
    case kOptNoAskPassword:
      return &o.noAskPassword;
    case kOptRuntime:
      return &o.runtime;
    case kOptReadOnly:
      return &o.loop.readOnly;
    case kOptAutoclear:
      return &o.loop.autoclear;
    case kOptPartscan:
      return &o.loop.partscan;
    case kOptAll:
      return &o.loop.all;
    case kOptCapacity:
      return &o.loop.capacity;
    case kOptForce:
      return &o.loop.force;
    default:
      return nullptr;
  }
}

// An option with a value (or an optional one).
Status applyValue(CliOptions& o, const CliArg& a) {
  switch (a.id) {
    case kOptJson: {
      auto m = parseJsonMode(a);
      if (!m) return m.error();
      o.json = *m;
      return Ok{};
    }
    case kOptBus: {
      auto bus = dbus::BusTarget::parse(*a.value);
      if (!bus) return invalid(bus.error().message);
      o.bus = *bus;
      return Ok{};
    }
    case kOptUser: {
      auto uid = userArg(a);
      if (!uid) return uid.error();
      o.userUid = *uid;
      return Ok{};
    }
    case kOptDirectIo:
      o.loop.directIo = a.value.value_or("on");
      return Ok{};
    case kOptOffset:
    case kOptSize: {
      auto n = sizeArg(a);
      if (!n) return n.error();
      (a.id == kOptOffset ? o.loop.offset : o.loop.size) = *n;
      return Ok{};
    }
    case kOptBlockSize: {
      auto n = blockSizeArg(a);
      if (!n) return n.error();
      o.loop.blockSize = *n;
      return Ok{};
    }
    case kOptBackend:
      if (!backendKindFromName(*a.value))
        return cliValueError(a, "'" + *a.value + "' is not kernel, nbd or auto");
      o.loop.backend = *a.value;
      return Ok{};
    case kOptServerCgroup:
      if (*a.value != "caller" && *a.value != "daemon")
        return cliValueError(a, "'" + *a.value + "' is not caller or daemon");
      o.loop.serverCgroup = *a.value;
      return Ok{};
    case kOptWorkers:
    case kOptQueueDepth:
    case kOptNbdTimeout: {
      // policy/blockdev/loop_vocab.h; the daemon bounds the queue depth by the loop module's
      // hw_queue_depth.
      const uint32_t min = a.id == kOptQueueDepth ? kMinQueueDepth : 1;
      const uint32_t max = a.id == kOptWorkers      ? static_cast<uint32_t>(kMaxLoopWorkers)
                           : a.id == kOptQueueDepth ? kMaxQueueDepth
                                                    : kMaxNbdTimeoutSec;
      auto n = countArg(a, min, max);
      if (!n) return n.error();
      (a.id == kOptWorkers      ? o.loop.workers
       : a.id == kOptQueueDepth ? o.loop.queueDepth
                                : o.loop.nbdTimeout) = *n;
      return Ok{};
    }
  }
  return invalid("unexpected option '" + a.name + "'");
}

// The verb and its arguments: known, the right count, and only options it takes.
Status checkVerb(Invocation& inv, const std::vector<std::string>& positional) {
  const auto& o = inv.options;
  inv.verb = positional[0];
  inv.args.assign(positional.begin() + 1, positional.end());
  auto it = verbs().find(inv.verb);
  if (it == verbs().end()) return invalid("unknown command '" + inv.verb + "' (see --help)");
  if (inv.verb == "loop") {
    if (auto st = checkLoopArgs(inv); !st) return st.error();
  } else if (o.loop.any()) {
    return invalid(
        "--read-only, --offset, --size, --block-size, --direct-io, --autoclear, "
        "--partscan, --backend, --workers, --queue-depth, --nbd-timeout, --server-cgroup, "
        "--all, --capacity "
        "and --force apply only to the loop commands");
  } else if (inv.args.size() != it->second.args) {
    return invalid("usage: cxiosyncctl " + std::string(it->second.synopsis));
  }
  if (o.runtime && inv.verb != "isolate" && inv.verb != "boost" && inv.verb != "ceiling" &&
      inv.verb != "tenant") {
    return invalid("--runtime applies only to isolate, boost, ceiling and tenant");
  }
  if (o.userUid && std::string_view(it->second.synopsis).find(" CG") == std::string_view::npos) {
    return invalid("--user applies only to the commands that take a CG");
  }
  return Ok{};
}

}  // namespace

Result<Invocation> parseArgs(const std::vector<std::string>& args) {
  Invocation inv;
  auto& o = inv.options;
  std::vector<std::string> positional;
  CommandLine cl(args, "hq", ctlOptions());
  while (true) {
    auto a = cl.next();
    if (!a) return invalid(a.error().message + " (see --help)");
    if (!*a) break;
    const CliArg& arg = **a;
    if (arg.id == CliArg::kPositional) {
      positional.push_back(arg.name);
    } else if (arg.id == kOptVersion) {
      positional.insert(positional.begin(), "version");
    } else if (bool* flag = flagTarget(o, arg.id)) {
      *flag = true;
    } else if (auto st = applyValue(o, arg); !st) {
      return st.error();
    }
  }
  for (auto& r : cl.rest()) positional.push_back(std::move(r));  // after "--"
  if (o.help) {
    inv.verb = "help";
    return inv;
  }
  if (positional.empty()) {
    inv.verb = "status";
    return inv;
  }
  if (auto st = checkVerb(inv, positional); !st) return st.error();
  return inv;
}

int run(const Invocation& inv, const Io& io) {
  return Runner(inv, io).run();
}

}  // namespace cxiosync::ctl
