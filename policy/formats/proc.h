// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// procfs per-task files: /proc/PID/task/TID/{stat,syscall,cgroup}.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/result.h"

namespace cxiosync {

// /proc/PID/stat: "pid (comm) S ppid ...". comm may hold spaces and ')': the comm ends at
// the LAST ')' of the line. comm is taken raw (the kernel does not escape it; it may even hold
// '\n'), so the input is not split into lines: one trailing '\n' is removed. Fields after
// the comm must number at least 20 (up to starttime, field 22); later fields are not read.
// pid must be a positive decimal, ppid a non-negative one, state one letter.
struct ProcStat {
  int64_t pid = 0;
  std::string comm;
  char state = '?';  // R S D Z T t X I ...
  int64_t ppid = 0;
  uint64_t startTimeTicks = 0;  // field 22: clock ticks after boot (tells pid reuse apart)
};
Result<ProcStat> parseProcStat(std::string_view text);

// /proc/PID/task/TID/syscall (fs/proc/base.c: proc_pid_syscall): "running", or
// "NR 0xARG1 .. 0xARG6 0xSP 0xPC" (NR decimal, the rest hex with 0x), or "-1 0xSP 0xPC" when
// the task is blocked outside a syscall. Any negative NR is NotInSyscall (then exactly two
// hex values must follow); a non-negative NR needs exactly eight hex values. One trailing
// newline is allowed; anything else is an error.
struct ProcSyscall {
  enum class Kind { Running, InSyscall, NotInSyscall } kind = Kind::Running;
  int64_t nr = -1;  // valid for InSyscall (for NotInSyscall: the negative number printed)
  std::array<uint64_t, 6> args{};  // InSyscall only
  uint64_t sp = 0;                 // user stack pointer; InSyscall and NotInSyscall
  uint64_t pc = 0;                 // user instruction pointer; InSyscall and NotInSyscall
};
Result<ProcSyscall> parseProcSyscall(std::string_view text);

// /proc/PID/cgroup: "ID:CONTROLLERS:PATH" lines (kernel/cgroup/cgroup.c: proc_cgroup_show).
// The cgroup v2 line is "0::PATH". When the thread's v2 cgroup has been removed, the kernel
// appends " (deleted)" to PATH. PATH may contain ':' (everything after the second ':' is the
// path) and must start with '/' (paths outside the reader's cgroup namespace look like
// "/../x"). A cgroup name holding '\n' cannot be told apart from a line break: such a file
// gives an error or a wrong path, never UB.
struct ProcCgroupLine {
  uint32_t hierarchyId = 0;
  std::string controllers;  // "cpu,cpuacct", "name=systemd", "" for v2
  std::string path;         // " (deleted)" removed, see `deleted`
  bool deleted = false;
};
struct ProcCgroup {
  std::optional<ProcCgroupLine> v2;  // the "0::" line, nullopt on pure v1
  std::vector<ProcCgroupLine> v1;    // hybrid / legacy hierarchies, in file order
};
// Every line is checked (numeric id, two ':', path starting with '/'); a second "0::" line is
// an error. An empty file gives no v2 line and no v1 lines.
Result<ProcCgroup> parseProcCgroup(std::string_view text);

// Returns the cgroup v2 path of the "0::PATH" line (e.g. "/system.slice/x"), with a
// " (deleted)" suffix removed; nullopt when there is none (pure v1 or empty file). Hybrid
// systems have v1 lines too: ignored (but must be well-formed, see parseProcCgroup).
Result<std::optional<std::string>> parseProcCgroupV2(std::string_view text);

}  // namespace cxiosync
