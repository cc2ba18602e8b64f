// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/unit_name.h"

#include <cerrno>

#include "dbus/validate.h"
#include "policy/bytes_text.h"
#include "policy/config/dropin.h"

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

// "a-b.slice" → "/a.slice/a-b.slice", "io.slice" → "/_io.slice"; "-.slice" → "/": the same
// mapping the daemon uses for drop-ins (policy/config/dropin.h). Invalid names are EINVAL.
Result<std::string> slicePath(std::string_view name) {
  auto path = sliceUnitToCgroupPath(name);
  if (!path) return invalid(path.error().message);
  return path->display();
}

// Validated as the daemon does: a name that is not UTF-8 is written "\xff" (the escape every
// reply uses, policy/bytes_text.h), checked on its bytes, and sent in that text form.
Result<ResolvedCgroup> checked(std::string_view path, ResolvedCgroup r) {
  auto c = dbus::parseCgroupText(path);
  if (!c) return c.error();
  r.path = textFromBytes(c->display());
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

// `managerRoot`: the cgroup of the manager that answered ("" for the system manager), under
// which its slices live.
Result<ResolvedCgroup> fromSystemd(std::string_view unit, const UnitAnswer& a,
                                   const std::string& managerRoot = "") {
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
      std::string future = managerRoot + (*parent == "/" ? "" : *parent) + "/" + cgroupEscape(unit);
      msg += "; when started it will be " + future + " (" + a.slice +
             "), pass that path to set policy before it starts";
    }
  }
  return makeError(msg, ENOENT);
}

// A service or scope name (not a slice), or EINVAL.
Status checkUnitName(std::string_view arg) {
  std::string_view prefix = arg.substr(0, arg.rfind('.'));
  if (!validPrefix(prefix)) return invalid("'" + std::string(arg) + "' is not a valid unit name");
  return Ok{};
}

bool isServiceOrScope(std::string_view arg) {
  return endsWith(arg, ".service") || endsWith(arg, ".scope");
}

}  // namespace

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
  if (!isPath && isServiceOrScope(arg)) {
    if (auto st = checkUnitName(arg); !st) return st.error();
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
  return checked(arg, ResolvedCgroup{});
}

std::string userManagerCgroup(uint32_t uid) {
  const std::string u = std::to_string(uid);
  return "/user.slice/user-" + u + ".slice/user@" + u + ".service";
}

Result<ResolvedCgroup> resolveUserCgroupArg(std::string_view arg, uint32_t uid,
                                            UnitLookup* systemd) {
  if (arg.empty() || arg.find('/') != std::string_view::npos) {
    return resolveCgroupArg(arg, nullptr);  // a path names the whole tree, --user or not
  }
  const std::string root = userManagerCgroup(uid);
  ResolvedCgroup r;
  r.fromUnit = true;
  if (endsWith(arg, ".slice")) {
    auto path = slicePath(arg);
    if (!path) return path.error();
    return checked(*path == "/" ? root : root + *path, r);
  }
  if (!isServiceOrScope(arg)) return checked(arg, ResolvedCgroup{});
  if (auto st = checkUnitName(arg); !st) return st.error();
  if (arg == "init.scope") return checked(root + "/init.scope", r);
  std::string why;
  if (systemd) {
    UnitAnswer a = systemd->lookup(std::string(arg));
    if (a.kind != UnitAnswer::Kind::Unreachable) return fromSystemd(arg, a, root);
    why = "the user manager of uid " + std::to_string(uid) + " is not reachable" +
          (a.reason.empty() ? "" : " (" + a.reason + ")") + "; ";
  }
  r.assumed = true;
  auto out = checked(root + "/app.slice/" + cgroupEscape(arg), r);
  if (out) {
    out->note = "Note: " + why + "assuming " + std::string(arg) +
                " is in the user manager's default slice: " + out->path +
                " (pass a cgroup path if it is elsewhere)";
  }
  return out;
}

}  // namespace cxiosync::ctl
