// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// One thread of a fake /proc as the daemon's /proc readers see it (daemon/kernel/proc_fs.cpp):
// stat, syscall, cgroup and status, under both /proc/PID and /proc/PID/task/TID. Shared by
// the suites that run the real cxiosyncd over a fake tree (tests/dbus, tests/hostile).
#include <sys/syscall.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace cxiosync::fakeproc {

// What /proc/TID/syscall shows first for a thread in sync(2).
constexpr long kSyncNr = SYS_sync;

inline void addProcThread(const std::filesystem::path& proc, int pid, const std::string& comm,
                          char state, long syscallNr, const std::string& cgroup) {
  const std::string id = std::to_string(pid);
  std::string stat = id + " (" + comm + ") " + state + " 1 " + id + " " + id + " 0 -1 4194560";
  for (int f = 10; f <= 21; ++f) stat += " 0";
  stat += " 1000";  // field 22, starttime
  for (int f = 23; f <= 52; ++f) stat += " 0";
  char sc[128];
  std::snprintf(sc, sizeof sc, "%ld 0x0 0x0 0x0 0x0 0x0 0x0 0x7ffd0000 0x7f000000\n", syscallNr);
  for (const std::filesystem::path& base : {proc / id / "task" / id, proc / id}) {
    std::filesystem::create_directories(base);
    std::ofstream(base / "stat") << stat << "\n";
    std::ofstream(base / "syscall") << sc;
    std::ofstream(base / "cgroup") << "0::" << cgroup << "\n";
    std::ofstream(base / "status")
        << "Name:\t" << comm << "\nTgid:\t" << id << "\nPid:\t" << id << "\n";
  }
}

// A thread blocked (D) in sync(2) in `cgroup`.
inline void addSyncer(const std::filesystem::path& proc, int pid, const std::string& cgroup) {
  addProcThread(proc, pid, "syncer", 'D', kSyncNr, cgroup);
}

}  // namespace cxiosync::fakeproc
