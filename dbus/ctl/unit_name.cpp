#include "dbus/ctl/unit_name.h"

#include <array>
#include <cerrno>

#include "dbus/validate.h"

namespace cxiosync::ctl {

namespace {

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Error invalid(std::string m) {
  return makeError(std::move(m), EINVAL);
}

// systemd unit name prefix characters: [A-Za-z0-9:_.\\-] (unit-name.c VALID_CHARS) and '@'.
bool validPrefix(std::string_view p) {
  if (p.empty()) return false;
  for (char c : p) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == ':' || c == '_' || c == '.' || c == '-' || c == '\\' || c == '@';
    if (!ok) return false;
  }
  return true;
}

// "a-b.slice" → "/a.slice/a-b.slice"; "-.slice" → "/". Invalid names are EINVAL.
Result<std::string> slicePath(std::string_view name) {
  std::string_view prefix = name.substr(0, name.size() - 6);  // without ".slice"
  if (prefix == "-") return std::string("/");
  if (!validPrefix(prefix) || prefix.front() == '-' || prefix.back() == '-' ||
      prefix.find("--") != std::string_view::npos) {
    return invalid("'" + std::string(name) + "' is not a valid slice name");
  }
  std::string path;
  size_t pos = 0;
  while (true) {
    size_t dash = prefix.find('-', pos);
    std::string_view part = prefix.substr(0, dash == std::string_view::npos ? prefix.size() : dash);
    path += "/" + cgroupEscape(std::string(part) + ".slice");
    if (dash == std::string_view::npos) break;
    pos = dash + 1;
  }
  return path;
}

Result<ResolvedCgroup> checked(const std::string& path, ResolvedCgroup r) {
  auto c = dbus::parseCgroupArg(path);
  if (!c) return c.error();
  r.path = c->display();
  return r;
}

// A service or scope (not init.scope) under the default slice.
Result<ResolvedCgroup> assumeDefaultSlice(std::string_view unit, const std::string& why) {
  ResolvedCgroup r;
  r.fromUnit = true;
  r.assumed = true;
  auto out = checked("/system.slice/" + cgroupEscape(unit), r);
  if (out) {
    out->note = "Note: " + why + "assuming " + std::string(unit) +
                " is in the default slice: " + out->path +
                " (pass a cgroup path if it is elsewhere)";
  }
  return out;
}

Result<ResolvedCgroup> fromSystemd(std::string_view unit, const UnitAnswer& a) {
  const std::string name(unit);
  if (a.kind == UnitAnswer::Kind::Refused) {
    return makeError("Cannot resolve " + name + " through systemd: " + a.reason, EIO);
  }
  if (!a.controlGroup.empty()) {
    ResolvedCgroup r;
    r.fromUnit = true;
    r.fromSystemd = true;
    auto out = checked(a.controlGroup, r);
    if (!out) {
      return makeError("systemd gave " + name + " the cgroup '" + a.controlGroup +
                           "', which is not usable: " + out.error().message,
                       EPROTO);
    }
    return out;
  }
  // No cgroup now: say why.
  if (a.loadState == "not-found") {
    return makeError("Unit " + name + " not found (systemd has no such unit)", ENOENT);
  }
  std::string msg = name + " is not active (" +
                    (a.activeState.empty() ? std::string("state unknown") : a.activeState) +
                    (a.loadState.empty() || a.loadState == "loaded" ? "" : ", " + a.loadState) +
                    "): a unit has a cgroup only while it runs";
  if (!a.slice.empty() && endsWith(a.slice, ".slice")) {
    auto parent = slicePath(a.slice);
    if (parent) {
      std::string future = (*parent == "/" ? "" : *parent) + "/" + cgroupEscape(unit);
      msg += "; when started it will be " + future + " (" + a.slice +
             "), pass that path to set policy before it starts";
    }
  }
  return makeError(msg, ENOENT);
}

}  // namespace

std::string cgroupEscape(std::string_view name) {
  // systemd 252 src/basic/cgroup-util.c cg_escape() and cgroup_controller_table.
  static constexpr std::array<std::string_view, 13> kControllers = {
      "cpu",
      "cpuacct",
      "cpuset",
      "io",
      "blkio",
      "memory",
      "devices",
      "pids",
      "bpf-firewall",
      "bpf-devices",
      "bpf-foreign",
      "bpf-socket-bind",
      "bpf-restrict-network-interfaces"};
  bool prefix = name.empty() || name[0] == '_' || name[0] == '.' || name == "notify_on_release" ||
                name == "release_agent" || name == "tasks" || name.substr(0, 7) == "cgroup.";
  if (!prefix) {
    size_t dot = name.rfind('.');
    if (dot != std::string_view::npos) {
      for (std::string_view c : kControllers) {
        if (name.substr(0, dot) == c) {
          prefix = true;
          break;
        }
      }
    }
  }
  return prefix ? "_" + std::string(name) : std::string(name);
}

Result<ResolvedCgroup> resolveCgroupArg(std::string_view arg) {
  return resolveCgroupArg(arg, nullptr);
}

Result<ResolvedCgroup> resolveCgroupArg(std::string_view arg, UnitLookup* systemd) {
  if (arg.empty()) return invalid("empty cgroup (use \"/\" for the root cgroup)");
  bool isPath = arg.find('/') != std::string_view::npos;
  if (!isPath && endsWith(arg, ".slice")) {
    auto path = slicePath(arg);
    if (!path) return path.error();
    ResolvedCgroup r;
    r.fromUnit = true;
    return checked(*path, r);
  }
  if (!isPath && (endsWith(arg, ".service") || endsWith(arg, ".scope"))) {
    std::string_view prefix = arg.substr(0, arg.rfind('.'));
    if (!validPrefix(prefix)) return invalid("'" + std::string(arg) + "' is not a valid unit name");
    if (arg == "init.scope") {
      ResolvedCgroup r;
      r.fromUnit = true;
      return checked("/init.scope", r);
    }
    if (!systemd) return assumeDefaultSlice(arg, "");
    UnitAnswer a = systemd->lookup(std::string(arg));
    if (a.kind == UnitAnswer::Kind::Unreachable) {
      return assumeDefaultSlice(
          arg, "systemd is not reachable" + (a.reason.empty() ? "" : " (" + a.reason + ")") + "; ");
    }
    return fromSystemd(arg, a);
  }
  auto c = dbus::parseCgroupArg(arg);
  if (!c) return c.error();
  return ResolvedCgroup{c->display(), false, false, false, {}};
}

}  // namespace cxiosync::ctl
