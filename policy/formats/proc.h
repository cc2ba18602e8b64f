#pragma once
// procfs per-task files: /proc/PID/task/TID/{stat,syscall,cgroup}.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "policy/result.h"

namespace cxiosync {

// /proc/PID/stat: "pid (comm) S ppid ...". comm may hold spaces and ')': the comm ends at
// the LAST ')' of the line.
struct ProcStat {
  int64_t pid = 0;
  std::string comm;
  char state = '?';  // R S D Z T t X I ...
  int64_t ppid = 0;
  uint64_t startTimeTicks = 0;  // field 22: clock ticks after boot (tells pid reuse apart)
};
Result<ProcStat> parseProcStat(std::string_view text);

// /proc/PID/task/TID/syscall: "running", or "NR arg1..arg6 sp pc" in hex args, or "-1 sp pc"
// when blocked outside a syscall.
struct ProcSyscall {
  enum class Kind { Running, InSyscall, NotInSyscall } kind = Kind::Running;
  int64_t nr = -1;  // valid for InSyscall
  std::array<uint64_t, 6> args{};
};
Result<ProcSyscall> parseProcSyscall(std::string_view text);

// /proc/PID/cgroup: returns the cgroup v2 path of the "0::PATH" line (e.g. "/system.slice/x"),
// nullopt when there is none (pure v1). Hybrid systems have v1 lines too: ignored.
Result<std::optional<std::string>> parseProcCgroupV2(std::string_view text);

}  // namespace cxiosync
