#pragma once
// One line of a tracefs `trace_pipe` in the default text format, e.g.
//   "            sync-133     [001] .....    12.345678: sys_sync()"
//   "            sync-133     [001] .....    12.345999: sys_sync -> 0x0"
//   "            sync-133     [001] .....    12.345700: writeback_queue: bdi 254:0: sb_dev 254:0
//        nr_pages=9223372036854775807 sync_mode=1 kupdate=0 range_cyclic=0 background=0
//        reason=sync cgroup_ino=23"
// plus "CPU:N [LOST M EVENTS]" overrun markers.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "policy/model/dev_num.h"
#include "policy/result.h"

namespace cxiosync {

struct TraceEvent {
  enum class Kind {
    SyscallEnter,
    SyscallExit,
    WritebackQueue,
    LostEvents,
    Other
  } kind = Kind::Other;
  std::string comm;
  int64_t tid = 0;
  uint32_t cpu = 0;
  uint64_t timestampUsec = 0;
  std::string syscall;                // "sync", "syncfs", "fsync", ... for enter/exit
  std::optional<int64_t> ret;         // exit only
  std::optional<int64_t> fd;          // enter of fd-taking syscalls (syncfs, fsync, ...)
  std::optional<DevNum> bdi;          // writeback_queue
  std::string reason;                 // writeback_queue: "sync", "background", ...
  std::optional<uint64_t> cgroupIno;  // writeback_queue
  uint64_t lostEvents = 0;            // LostEvents
};

// Returns Kind::Other for well-formed lines of events we do not interpret; an error only
// for lines that are not trace lines at all.
Result<TraceEvent> parseTraceLine(std::string_view line);

}  // namespace cxiosync
