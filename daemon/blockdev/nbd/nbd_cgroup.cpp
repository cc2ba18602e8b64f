// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/nbd/nbd_cgroup.h"

#include <fcntl.h>
#include <sys/statfs.h>

#include <cerrno>
#include <charconv>

#include "policy/formats/proc.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

namespace cxiosync::nbd {

Result<ServerCgroup> parseServerCgroup(std::string_view t) {
  if (t.empty()) return ServerCgroup::Default;
  if (t == "caller") return ServerCgroup::Caller;
  if (t == "daemon") return ServerCgroup::Daemon;
  return makeError(
      "server_cgroup \"" + std::string(t.substr(0, 64)) + "\" is not one of: caller, daemon",
      EINVAL);
}

const char* serverCgroupName(ServerCgroup m) {
  switch (m) {
    case ServerCgroup::Caller:
      return "caller";
    case ServerCgroup::Daemon:
      return "daemon";
    case ServerCgroup::Default:
      break;
  }
  return "default";
}

ServerCgroup effectiveServerCgroup(ServerCgroup asked, uint32_t callerUid) {
  if (asked != ServerCgroup::Default) return asked;
  return callerUid == 0 ? ServerCgroup::Daemon : ServerCgroup::Caller;
}

Result<std::string> cgroupRelativePath(std::string_view p) {
  auto bad = [&](const char* why) {
    return makeError("refusing cgroup path from /proc (" + std::string(why) + ")", EINVAL);
  };
  if (p.empty() || p.front() != '/') return bad("not absolute");
  if (p.size() > 4096) return bad("too long");
  if (p.find('\0') != std::string_view::npos) return bad("NUL byte");
  if (p == "/") return std::string(".");
  std::string_view rest = p.substr(1);
  size_t i = 0;
  while (i <= rest.size()) {
    size_t j = rest.find('/', i);
    if (j == std::string_view::npos) j = rest.size();
    std::string_view c = rest.substr(i, j - i);
    // "/.." is what /proc shows for a cgroup outside the reader's cgroup namespace.
    if (c.empty() || c == "." || c == "..") return bad("empty, \".\" or \"..\" component");
    i = j + 1;
  }
  return std::string(rest);
}

Result<TargetCgroup> openProcessCgroup(pid_t pid, uint32_t expectedUid, const std::string& procRoot,
                                       const std::string& cgroupRoot) {
  if (pid <= 0) return makeError("the caller's process is not known (no pid from the bus)", ESRCH);
  // The caller's identity path (caller_privilege.h): both files through one /proc/PID fd,
  // pinned by the start time, so a reused pid fails instead of describing another process.
  auto pinned = PinnedProcess::open(pid, -1, procRoot);
  if (!pinned) return makeError("the caller's process " + std::to_string(pid) + " is gone", ESRCH);
  const std::string& pdir = pinned->path();
  auto status = readFileAt(pinned->dir(), "status", pdir + "/status");
  if (!status) return makeError("the caller's process " + std::to_string(pid) + " is gone", ESRCH);
  auto euid = parseStatusEuid(*status);
  if (!euid) return euid.error();
  if (*euid != expectedUid)
    return makeError("process " + std::to_string(pid) + " runs as uid " + std::to_string(*euid) +
                         ", not the caller's uid " + std::to_string(expectedUid),
                     EPERM);
  auto text = readFileAt(pinned->dir(), "cgroup", pdir + "/cgroup");
  if (!text || !pinned->stillSame())
    return makeError("the caller's process " + std::to_string(pid) + " is gone", ESRCH);
  auto parsed = parseProcCgroup(*text);
  if (!parsed)
    return makeError("/proc/" + std::to_string(pid) + "/cgroup: " + parsed.error().message, EINVAL);
  if (!parsed->v2)
    return makeError(
        "the caller is in no cgroup v2 (a pure cgroup v1 system): server_cgroup=caller "
        "needs cgroup v2",
        ENOTSUP);
  if (parsed->v2->deleted)
    return makeError("the caller's cgroup " + parsed->v2->path + " was removed", ENOENT);
  auto rel = cgroupRelativePath(parsed->v2->path);
  if (!rel) return rel.error();
  int rfd = ::open(cgroupRoot.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rfd < 0) return sysError(errno, "open", cgroupRoot);
  UniqueFd root(rfd);
  const std::string display = cgroupRoot + parsed->v2->path;
  auto dir = *rel == "." ? Result<UniqueFd>(UniqueFd(::fcntl(root.get(), F_DUPFD_CLOEXEC, 0)))
                         : openBeneath(root.get(), *rel, O_RDONLY | O_DIRECTORY,
                                       Resolve::NoSymlinks, display);
  if (!dir) return dir.error();
  if (dir->get() < 0) return sysError(errno, "dup", display);
  struct statfs fs {};
  if (::fstatfs(dir->get(), &fs) != 0) return sysError(errno, "statfs", display);
  if (static_cast<unsigned long>(fs.f_type) != CGROUP2_SUPER_MAGIC)
    return makeError(display + " is not on cgroup2 (is " + cgroupRoot + " the cgroup v2 root?)",
                     ENOTSUP);
  return TargetCgroup{parsed->v2->path, std::move(*dir)};
}

Status refuseFrozen(const TargetCgroup& t) {
  auto freeze = readFileAt(t.dir.get(), "cgroup.freeze", t.path + "/cgroup.freeze");
  const bool asked = freeze && freeze->rfind("1", 0) == 0;
  auto events = readFileAt(t.dir.get(), "cgroup.events", t.path + "/cgroup.events");
  const bool frozen = events && (events->rfind("frozen 1", 0) == 0 ||
                                 events->find("\nfrozen 1") != std::string::npos);
  if (!asked && !frozen) return Ok{};
  return makeError("the caller's cgroup " + t.path + " is frozen (" +
                       (asked ? "cgroup.freeze 1" : "cgroup.events frozen 1") +
                       "): an nbd server started there could not run; thaw it and retry",
                   EBUSY);
}

std::string processCgroupPath(pid_t pid, const std::string& procRoot) {
  if (pid <= 0) return {};
  const std::string p = procRoot + "/" + std::to_string(pid) + "/cgroup";
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  UniqueFd f(fd);
  auto t = readAll(f.get(), p);
  if (!t) return {};
  auto v2 = parseProcCgroupV2(*t);
  if (!v2 || !*v2) return {};
  return **v2;
}

}  // namespace cxiosync::nbd
