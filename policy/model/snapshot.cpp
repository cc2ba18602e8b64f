// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/model/snapshot.h"

#include <algorithm>
#include <set>

namespace cxiosync {

const char* syncSyscallName(SyncSyscall s) {
  switch (s) {
    case SyncSyscall::Sync:
      return "sync";
    case SyncSyscall::Syncfs:
      return "syncfs";
    case SyncSyscall::Fsync:
      return "fsync";
    case SyncSyscall::Fdatasync:
      return "fdatasync";
    case SyncSyscall::SyncFileRange:
      return "sync_file_range";
    case SyncSyscall::Msync:
      return "msync";
  }
  return "unknown";
}

std::vector<DevNum> DeviceStack::below(const DevNum& dev) const {
  std::vector<DevNum> out;
  std::set<DevNum> seen{dev};  // cycles (a broken sysfs view) must not loop forever
  std::vector<DevNum> frontier{dev};
  while (!frontier.empty()) {
    std::vector<DevNum> next;
    for (const DevNum& d : frontier) {
      auto it = lower.find(d);
      if (it == lower.end()) continue;
      for (const DevNum& l : it->second) {
        if (seen.insert(l).second) {
          out.push_back(l);
          next.push_back(l);
        }
      }
    }
    frontier = std::move(next);
  }
  return out;
}

}  // namespace cxiosync
