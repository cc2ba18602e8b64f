// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/trace_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace cxiosync {

namespace {

bool validInstanceName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.size() > 200) return false;
  return name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

std::string instRel(const std::string& name) {
  return std::string(tracefile::kInstances) + "/" + name;
}

}  // namespace

Result<std::unique_ptr<TraceFs>> TraceFs::open(const std::string& root) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sysError(errno, "open tracefs root", root);
  return std::make_unique<TraceFs>(UniqueFd(fd), root);
}

TraceFs::TraceFs(UniqueFd rootFd, std::string root)
    : rootFd_(std::move(rootFd)), root_(std::move(root)) {}

Result<std::vector<std::string>> TraceFs::listInstances() const {
  auto entries = listDir(rootFd_.get(), tracefile::kInstances, root_ + "/" + tracefile::kInstances);
  if (!entries) return entries.error();
  std::vector<std::string> out;
  for (auto& e : *entries) out.push_back(std::move(e.name));
  std::sort(out.begin(), out.end());
  return out;
}

Status TraceFs::createInstance(const std::string& name) {
  if (!validInstanceName(name)) return Error{EINVAL, "bad tracefs instance name " + name};
  std::string rel = instRel(name);
  if (::mkdirat(rootFd_.get(), rel.c_str(), 0700) != 0) {
    return sysError(errno, "mkdir", root_ + "/" + rel);
  }
  return Ok{};
}

Status TraceFs::removeInstance(const std::string& name) {
  if (!validInstanceName(name)) return Error{EINVAL, "bad tracefs instance name " + name};
  std::string rel = instRel(name);
  if (::unlinkat(rootFd_.get(), rel.c_str(), AT_REMOVEDIR) != 0) {
    return sysError(errno, "rmdir", root_ + "/" + rel);
  }
  return Ok{};
}

Status TraceFs::writeInInstance(const std::string& instance, const std::string& rel,
                                const std::string& data) {
  if (!validInstanceName(instance)) return Error{EINVAL, "bad tracefs instance name " + instance};
  std::string full = instRel(instance) + "/" + rel;
  return writeFileAt(rootFd_.get(), full, data, root_ + "/" + full);
}

Status TraceFs::setEventEnabled(const std::string& instance, const std::string& event, bool on) {
  return writeInInstance(instance,
                         std::string(tracefile::kEvents) + "/" + event + "/" + tracefile::kEnable,
                         on ? "1" : "0");
}

Status TraceFs::setBufferSizeKb(const std::string& instance, unsigned kb) {
  return writeInInstance(instance, tracefile::kBufferSizeKb, std::to_string(kb));
}

Status TraceFs::setTracingOn(const std::string& instance, bool on) {
  return writeInInstance(instance, tracefile::kTracingOn, on ? "1" : "0");
}

Status TraceFs::setBufferPercent(const std::string& instance, unsigned percent) {
  return writeInInstance(instance, tracefile::kBufferPercent, std::to_string(percent));
}

Status TraceFs::setTraceClock(const std::string& instance, const std::string& clock) {
  return writeInInstance(instance, tracefile::kTraceClock, clock);
}

Result<UniqueFd> TraceFs::openPipe(const std::string& instance) {
  if (!validInstanceName(instance)) return Error{EINVAL, "bad tracefs instance name " + instance};
  std::string rel = instRel(instance) + "/" + tracefile::kTracePipe;
  return openBeneath(rootFd_.get(), rel, O_RDONLY | O_NONBLOCK, Resolve::NoSymlinks,
                     root_ + "/" + rel);
}

}  // namespace cxiosync
