// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sources/dropin_watch.h"

#include <dirent.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/kernel/inotify_events.h"

namespace cxiosync {
namespace {

constexpr uint32_t kSearchDirMask =
    IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ONLYDIR;
constexpr uint32_t kDropInDirMask =
    IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ONLYDIR;

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Result<std::unique_ptr<DropInWatch>> DropInWatch::open(std::string root,
                                                       std::vector<std::string> searchPath) {
  std::unique_ptr<DropInWatch> w(new DropInWatch());
  w->fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (w->fd_ < 0) return makeError(std::string("inotify: ") + std::strerror(errno), errno);
  w->root_ = std::move(root);
  w->searchPath_ = std::move(searchPath);
  w->rewatch();
  return w;
}

DropInWatch::~DropInWatch() {
  if (fd_ >= 0) ::close(fd_);
}

void DropInWatch::rewatch() {
  for (const auto& d : searchPath_) watchSearchDir(root_ + d);
}

void DropInWatch::watchSearchDir(const std::string& dir) {
  int wd = inotify_add_watch(fd_, dir.c_str(), kSearchDirMask);
  if (wd < 0) return;  // missing: rewatch() tries again later
  watches_[wd] = Watched{dir, true};
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (struct dirent* de = readdir(d)) {
    std::string_view name = de->d_name;
    if (endsWith(name, ".d")) watchDropInDir(dir + "/" + std::string(name));
  }
  closedir(d);
}

void DropInWatch::watchDropInDir(const std::string& dir) {
  // IN_ONLYDIR: "foo.d" files that are not directories are refused here.
  int wd = inotify_add_watch(fd_, dir.c_str(), kDropInDirMask);
  if (wd >= 0) watches_[wd] = Watched{dir, false};
}

bool DropInWatch::onReadable() {
  bool relevant = false;
  drainInotify(fd_, [&](const inotify_event& ev) {
    if (ev.mask & IN_Q_OVERFLOW) {
      relevant = true;  // events were lost: assume anything changed
      return;
    }
    if (ev.mask & IN_IGNORED) {
      watches_.erase(ev.wd);  // the directory went away
      return;
    }
    auto it = watches_.find(ev.wd);
    if (it == watches_.end() || ev.len == 0) return;
    std::string_view name = ev.name;
    if (it->second.searchDir) {
      if (!endsWith(name, ".d")) return;
      relevant = true;
      if (ev.mask & (IN_CREATE | IN_MOVED_TO))
        watchDropInDir(it->second.dir + "/" + std::string(name));
    } else if (endsWith(name, ".conf") && name[0] != '.') {
      relevant = true;
    }
  });
  return relevant;
}

}  // namespace cxiosync
