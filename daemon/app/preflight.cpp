// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/app/preflight.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "daemon/kernel/fs.h"

namespace cxiosync {

namespace {

constexpr const char* kFix = "boot with systemd.unified_cgroup_hierarchy=1";

bool isDir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Status checkCgroupRoot(const std::string& root) {
  UniqueFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) {
    return makeError("no cgroup2 hierarchy at " + root + ": " + std::strerror(errno), errno);
  }
  auto text = readFileAt(dir.get(), "cgroup.controllers", root + "/cgroup.controllers");
  if (!text) {
    // Debian 10's and RHEL 8's default: v1 controllers at the root, cgroup2 (without any
    // controller) at unified/. Nothing there has io.max, so nothing can be boosted.
    std::string layout = isDir(root + "/unified") ? "a hybrid cgroup layout (cgroup2 only at " +
                                                        root + "/unified, without controllers)"
                                                  : "not a cgroup2 mount";
    return makeError("no cgroup2 io controller at " + root + ": " + layout + "; " + kFix,
                     text.error().code);
  }
  std::istringstream words(*text);
  for (std::string w; words >> w;) {
    if (w == "io") return Ok{};
  }
  return makeError("no cgroup2 io controller at " + root + " (cgroup.controllers: '" +
                       std::string(text->substr(0, text->find('\n'))) +
                       "'; io is bound to cgroup v1's blkio or disabled by cgroup_no_v1/"
                       "cgroup_disable); " +
                       kFix,
                   ENOENT);
}

Status checkTracefsRoot(const std::string& root) {
  if (isDir(root + "/instances") && isDir(root + "/events")) return Ok{};
  return makeError("detector: tracefs, but no tracefs at " + root +
                       "; mount it (mount -t tracefs tracefs " + root +
                       ") or use detector: auto (procfs polling when tracefs is missing)",
                   ENOENT);
}

}  // namespace cxiosync
