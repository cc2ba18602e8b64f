// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// inotify on the unit search path, so an edited [X-CxIOSync] drop-in applies without a reload:
// every existing search-path directory (for "<unit>.d" directories that appear or go away) and
// every "*.d" directory in them (for "*.conf" files written, renamed into place or removed).
// A search-path directory that does not exist yet is picked up by rewatch(), which the daemon
// calls after systemd reloads and on SIGHUP.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "policy/result.h"

namespace cxiosync {

class DropInWatch {
 public:
  // `root` prefixes every search-path directory ("" = /).
  static Result<std::unique_ptr<DropInWatch>> open(std::string root,
                                                   std::vector<std::string> searchPath);
  ~DropInWatch();
  DropInWatch(const DropInWatch&) = delete;
  DropInWatch& operator=(const DropInWatch&) = delete;

  int fd() const { return fd_; }
  // Drains the pending events; true when a drop-in may have changed. New "*.d" directories are
  // watched from now on.
  bool onReadable();
  // Watches what exists now (search-path directories created since open()).
  void rewatch();
  size_t watchCount() const { return watches_.size(); }

 private:
  DropInWatch() = default;
  void watchSearchDir(const std::string& dir);
  void watchDropInDir(const std::string& dir);

  int fd_ = -1;
  std::string root_;
  std::vector<std::string> searchPath_;
  struct Watched {
    std::string dir;
    bool searchDir = false;  // a search-path directory, not a "*.d" one
  };
  std::map<int, Watched> watches_;  // watch descriptor -> directory
};

}  // namespace cxiosync
