#include "daemon/blockdev/devices/backend_tool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

#include "policy/config/values.h"

namespace cxiosync {

int loopToolFail(const Error& e) {
  std::fprintf(stderr, "cxiosync-loop: %s\n", e.message.c_str());
  return e.code == EPERM || e.code == EACCES ? 4 : 1;
}

uint64_t loopToolSize(const std::string& opt, const std::string& v) {
  auto n = parseSize(v);
  if (!n) {
    std::fprintf(stderr, "cxiosync-loop: %s: %s\n", opt.c_str(), n.error().message.c_str());
    std::exit(2);
  }
  return *n;
}

namespace {

int fail(const Error& e) {
  return loopToolFail(e);
}

bool isOurs(const std::string& a) {
  for (const char* o : {"--workers", "--backend", "--queue-depth", "--nbd-timeout"})
    if (a == o || a.rfind(std::string(o) + "=", 0) == 0) return true;
  return false;
}

bool isNbdName(const std::string& d) {
  return static_cast<bool>(parseNbdName(d));
}

Result<std::unique_ptr<BlockDevices>> open(const BlockToolGlobal& g) {
  BlockDevices::Options o;
  o.loop = g.mo;
  return BlockDevices::create(o);
}

void emitOne(const BlockToolGlobal& g, const BlockDeviceInfo& d) {
  if (g.json) {
    std::cout << jsonDump(blockInfoJson(d), 2) << "\n";
  } else {
    printBlockShow(d);
  }
}

int cmdAdd(const BlockToolGlobal& g, const std::vector<std::string>& args) {
  BlockSetupOptions o;
  std::string file;
  bool fdReadOnly = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto is = [&](const char* n) { return a == n || a.rfind(std::string(n) + "=", 0) == 0; };
    auto val = [&](const char* n) -> std::optional<std::string> {
      const std::string name = n;
      if (a.size() > name.size() && a[name.size()] == '=') return a.substr(name.size() + 1);
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    auto need = [&](const char* n) -> std::string {
      auto v = val(n);
      if (!v) {
        std::fprintf(stderr, "cxiosync-loop: %s needs a value\n", n);
        std::exit(2);
      }
      return *v;
    };
    auto size = [&](const char* n) { return loopToolSize(n, need(n)); };
    if (is("--workers")) {
      auto w = parseWorkers(need("--workers"));
      if (!w) return fail(w.error());
      o.workers = *w;
    } else if (is("--backend")) {
      auto b = parseBackendKind(need("--backend"));
      if (!b) return fail(b.error());
      o.backend = *b;
    } else if (is("--queue-depth")) {
      auto q = parseQueueDepth(need("--queue-depth"), loopHwQueueDepth(g.mo.sysRoot));
      if (!q) return fail(q.error());
      o.queueDepth = *q;
    } else if (is("--nbd-timeout")) {
      uint64_t t = size("--nbd-timeout");
      if (t < 1 || t > 3600) {
        std::fputs("cxiosync-loop: --nbd-timeout must be 1..3600 seconds\n", stderr);
        return 2;
      }
      o.nbdTimeoutSec = static_cast<uint32_t>(t);
    } else if (a == "--read-only" || a == "-r") {
      o.loop.readOnly = true;
    } else if (a == "--fd-read-only") {
      fdReadOnly = true;
    } else if (a == "--partscan" || a == "-P") {
      o.loop.partscan = true;
    } else if (is("--offset")) {
      o.loop.offset = size("--offset");
    } else if (is("--size") || is("--sizelimit")) {
      o.loop.sizeLimit = size(is("--size") ? "--size" : "--sizelimit");
    } else if (is("--block-size") || is("--sector-size")) {
      uint64_t v = size(is("--block-size") ? "--block-size" : "--sector-size");
      if (v > UINT32_MAX) return 2;
      o.loop.blockSize = static_cast<uint32_t>(v);
    } else if (is("--direct-io")) {
      auto mode = parseDirectIoMode(a == "--direct-io" ? std::string("on") : a.substr(12));
      if (!mode) return fail(mode.error());
      o.loop.directIo = *mode;
    } else if (a == "--autoclear" || a == "--") {
      std::fputs(
          "cxiosync-loop: --autoclear and -- CMD cannot be combined with --workers, "
          "--backend or --queue-depth\n",
          stderr);
      return 2;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "cxiosync-loop: add: unknown option %s\n", a.c_str());
      return 2;
    } else if (file.empty()) {
      file = a;
    } else {
      std::fputs("cxiosync-loop: add takes one FILE\n", stderr);
      return 2;
    }
  }
  if (file.empty()) {
    std::fputs("cxiosync-loop: add: FILE missing\n", stderr);
    return 2;
  }
  int fd = ::open(file.c_str(), (o.loop.readOnly || fdReadOnly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0 && !o.loop.readOnly && (errno == EROFS || errno == EACCES || errno == EPERM))
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "cxiosync-loop: %s: %s\n", file.c_str(), std::strerror(errno));
    return 1;
  }
  UniqueFd backing(fd);
  auto bd = open(g);
  if (!bd) return fail(bd.error());
  auto r = (*bd)->setup(backing.get(), o, g.uid);
  if (!r) return fail(r.error());
  if (g.json) {
    Json notes = Json::array();
    for (const auto& n : r->notes) notes.push_back(jsonBytes(n));
    Json out = {{"device", blockInfoJson(r->device)},
                {"backend-reason", jsonBytes(r->choice.reason)},
                {"notes", std::move(notes)}};
    std::cout << jsonDump(out, 2) << "\n";
  } else {
    std::printf("%s\n", r->device.path.c_str());
    for (const auto& n : r->notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  }
  return 0;
}

int cmdSet(const BlockToolGlobal& g, const std::vector<std::string>& args) {
  const std::string dev = args[0];
  bool force = false;
  std::optional<std::string> workers, depth;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto val = [&](const char* n) -> std::string {
      const std::string name = n;
      if (a.size() > name.size() && a[name.size()] == '=') return a.substr(name.size() + 1);
      if (i + 1 >= args.size()) return "";
      return args[++i];
    };
    if (a == "--force")
      force = true;
    else if (a == "--workers" || a.rfind("--workers=", 0) == 0)
      workers = val("--workers");
    else if (a == "--queue-depth" || a.rfind("--queue-depth=", 0) == 0)
      depth = val("--queue-depth");
    else {
      std::fprintf(stderr,
                   "cxiosync-loop: set: %s cannot be combined with --workers/--queue-depth "
                   "(give it in a separate set)\n",
                   a.c_str());
      return 2;
    }
  }
  auto bd = open(g);
  if (!bd) return fail(bd.error());
  Result<BlockDeviceInfo> last = makeError("nothing to do", EINVAL);
  if (depth) {
    auto q = parseQueueDepth(*depth, loopHwQueueDepth(g.mo.sysRoot));
    if (!q) return fail(q.error());
    last = (*bd)->setQueueDepth(dev, *q, g.uid, force);
    if (!last) return fail(last.error());
  }
  if (workers) {
    auto w = parseWorkers(*workers);
    if (!w) return fail(w.error());
    last = (*bd)->setWorkers(dev, *w, g.uid, force);
    if (!last) return fail(last.error());
  }
  emitOne(g, *last);
  return 0;
}

}  // namespace

void addBlockInfoFields(Json& obj, const BlockDeviceInfo& d) {
  obj["backend"] = d.backend;
  obj["workers"] = d.workers;
  obj["queue-depth"] = d.queueDepth;
  obj["in-flight-max"] = d.inFlightMax;
  obj["workers-settable-live"] = d.workersSettableLive;
  if (d.backend == "nbd") {
    obj["server-pid"] = static_cast<int64_t>(d.serverPid);
    obj["server-alive"] = d.serverAlive;
    obj["note"] = jsonBytes(d.note);
  }
}

Json blockInfoJson(const BlockDeviceInfo& d) {
  Json obj = {{"name", jsonBytes(d.path)},
              {"back-file", jsonBytes(d.backingFile)},
              {"size", d.sizeBytes},
              {"ro", d.readOnly},
              {"direct-io", d.directIo},
              {"foreign", d.foreign},
              {"setup-by-uid", d.setupByUid ? Json(*d.setupByUid) : Json(nullptr)}};
  addBlockInfoFields(obj, d);
  if (d.backend != "nbd") obj["note"] = jsonBytes(d.note);
  return obj;
}

void printBlockRows(const std::vector<BlockDeviceInfo>& devs) {
  for (const auto& d : devs) {
    std::string owner =
        d.foreign ? "foreign" : "uid:" + std::to_string(d.setupByUid ? *d.setupByUid : 0);
    std::string state = d.serverAlive ? "server " + std::to_string(d.serverPid)
                                      : "DEAD server " + std::to_string(d.serverPid);
    std::printf("%-12s %-7s %7d %6u %3d %2d %s  %s  %s\n", d.path.c_str(), d.backend.c_str(),
                d.workers, d.queueDepth, d.directIo ? 1 : 0, d.readOnly ? 1 : 0, owner.c_str(),
                state.c_str(), d.backingFile.c_str());
  }
  for (const auto& d : devs)
    if (!d.note.empty()) std::printf("%s: %s\n", d.name.c_str(), d.note.c_str());
}

void printBlockShow(const BlockDeviceInfo& d) {
  std::printf("%s\n", d.path.c_str());
  std::printf("  backend %s, workers %d, queue depth %u, up to %d backing I/Os in flight\n",
              d.backend.c_str(), d.workers, d.queueDepth, d.inFlightMax);
  std::printf("  backing file:   %s\n", d.backingFile.c_str());
  std::printf("  size %llu bytes, read-only %s, direct I/O %s\n",
              static_cast<unsigned long long>(d.sizeBytes), d.readOnly ? "yes" : "no",
              d.directIo ? "on" : "off");
  if (d.backend == "nbd")
    std::printf("  server: pid %d, %s\n", static_cast<int>(d.serverPid),
                d.serverAlive ? "running" : "DEAD");
  std::printf(
      "  owner: %s\n",
      d.foreign ? "foreign" : ("uid:" + std::to_string(d.setupByUid ? *d.setupByUid : 0)).c_str());
  if (!d.note.empty()) std::printf("  note: %s\n", d.note.c_str());
}

std::vector<BlockDeviceInfo> listNbdDevices(const BlockToolGlobal& g, bool includeForeign) {
  NbdManagerOptions no;
  no.runDir = g.mo.runDir;
  no.sysRoot = g.mo.sysRoot;
  no.devRoot = g.mo.devRoot;
  NbdManager m(no);
  auto l = m.list(includeForeign);
  return l ? *l : std::vector<BlockDeviceInfo>{};
}

int blockToolCommand(const BlockToolGlobal& g, const std::string& cmd,
                     const std::vector<std::string>& args) {
  if (cmd == "backends") {
    auto a = detectBackends(g.mo.sysRoot, g.mo.devRoot);
    if (g.json) {
      Json out = {{"loop",
                   {{"available", a.loop},
                    {"note", jsonBytes(a.loopNote)},
                    {"hw-queue-depth", a.loopHwQueueDepth}}},
                  {"nbd",
                   {{"available", a.nbd},
                    {"loaded", a.nbdLoaded},
                    {"note", jsonBytes(a.nbdNote)},
                    {"max-workers", kMaxLoopWorkers}}},
                  {"ublk", {{"available", a.ublk}, {"note", jsonBytes(a.ublkNote)}}}};
      std::cout << jsonDump(out, 2) << "\n";
    } else {
      std::printf("kernel loop: %s (%s; hw_queue_depth %u)\n", a.loop ? "yes" : "no",
                  a.loopNote.c_str(), a.loopHwQueueDepth);
      std::printf("nbd:         %s (%s; 1..%d workers)\n", a.nbd ? "yes" : "no", a.nbdNote.c_str(),
                  kMaxLoopWorkers);
      std::printf("ublk:        %s (%s)\n", a.ublk ? "yes" : "no", a.ublkNote.c_str());
    }
    return 0;
  }
  if (cmd == "add") {
    for (const auto& a : args) {
      if (a == "--") break;
      if (isOurs(a)) return cmdAdd(g, args);
    }
    return -1;
  }
  if (cmd == "set" && !args.empty()) {
    for (const auto& a : args)
      if (a == "--workers" || a.rfind("--workers=", 0) == 0 || a == "--queue-depth" ||
          a.rfind("--queue-depth=", 0) == 0)
        return cmdSet(g, args);
    if (isNbdName(args[0])) {
      std::fputs(
          "cxiosync-loop: set: an nbd device has no loop settings (only --workers, "
          "which needs a reconnect)\n",
          stderr);
      return 2;
    }
    return -1;
  }
  if ((cmd == "show" || cmd == "detach") && !args.empty() && isNbdName(args[0])) {
    NbdManagerOptions no;
    no.runDir = g.mo.runDir;
    no.sysRoot = g.mo.sysRoot;
    no.devRoot = g.mo.devRoot;
    NbdManager m(no);
    if (cmd == "show") {
      auto d = m.show(args[0]);
      if (!d) return fail(d.error());
      emitOne(g, *d);
      return 0;
    }
    bool force = args.size() > 1 && args[1] == "--force";
    auto r = m.detach(args[0], g.uid, force);
    if (!r) return fail(r.error());
    if (g.json) {
      Json out = {
          {"name", jsonBytes(r->name)}, {"detached", r->detached}, {"note", jsonBytes(r->note)}};
      std::cout << jsonDump(out, 2) << "\n";
    } else {
      std::printf("%s %s%s%s\n", r->name.c_str(), r->detached ? "detached" : "NOT detached",
                  r->note.empty() ? "" : ": ", r->note.c_str());
    }
    return r->detached ? 0 : 1;
  }
  return -1;
}

}  // namespace cxiosync
