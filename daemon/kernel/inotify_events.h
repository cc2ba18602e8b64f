// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Draining a non-blocking inotify fd: one loop for every watcher in the daemon (the config
// directory, the unit drop-in directories).
#include <sys/inotify.h>
#include <unistd.h>

namespace cxiosync {

// Calls fn(const inotify_event&) for every pending event until read() would block.
// The buffer is aligned and big enough for at least one event with a NAME_MAX name.
template <class Fn>
void drainInotify(int fd, Fn&& fn) {
  alignas(inotify_event) char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return;
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      fn(*ev);
    }
  }
}

}  // namespace cxiosync
