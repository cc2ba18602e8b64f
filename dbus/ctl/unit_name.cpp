#include "dbus/ctl/unit_name.h"

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

// systemd unit name prefix characters: [A-Za-z0-9:_.\\-] (unit-name.c VALID_CHARS, no '@' here).
bool validPrefix(std::string_view p) {
  if (p.empty()) return false;
  for (char c : p) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == ':' || c == '_' || c == '.' || c == '-' || c == '\\' || c == '@';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Result<ResolvedCgroup> resolveCgroupArg(std::string_view arg) {
  if (arg.empty()) return invalid("empty cgroup (use \"/\" for the root cgroup)");
  bool isPath = arg.find('/') != std::string_view::npos;
  if (!isPath && endsWith(arg, ".slice")) {
    std::string_view prefix = arg.substr(0, arg.size() - 6);
    if (prefix == "-") return ResolvedCgroup{"/", true, false};
    if (!validPrefix(prefix) || prefix.front() == '-' || prefix.back() == '-' ||
        prefix.find("--") != std::string_view::npos) {
      return invalid("'" + std::string(arg) + "' is not a valid slice name");
    }
    std::string path;
    size_t pos = 0;
    while (true) {
      size_t dash = prefix.find('-', pos);
      std::string_view part =
          prefix.substr(0, dash == std::string_view::npos ? prefix.size() : dash);
      path += "/" + std::string(part) + ".slice";
      if (dash == std::string_view::npos) break;
      pos = dash + 1;
    }
    auto checked = dbus::parseCgroupArg(path);
    if (!checked) return checked.error();
    return ResolvedCgroup{checked->display(), true, false};
  }
  if (!isPath && (endsWith(arg, ".service") || endsWith(arg, ".scope"))) {
    std::string_view prefix = arg.substr(0, arg.rfind('.'));
    if (!validPrefix(prefix)) return invalid("'" + std::string(arg) + "' is not a valid unit name");
    if (arg == "init.scope") return ResolvedCgroup{"/init.scope", true, false};
    auto checked = dbus::parseCgroupArg("/system.slice/" + std::string(arg));
    if (!checked) return checked.error();
    return ResolvedCgroup{checked->display(), true, true};
  }
  auto checked = dbus::parseCgroupArg(arg);
  if (!checked) return checked.error();
  return ResolvedCgroup{checked->display(), false, false};
}

}  // namespace cxiosync::ctl
