// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// One line of a tracefs `trace_pipe` in the default text format, e.g.
//   "            sync-133     [001] .....    12.345678: sys_sync()"
//   "            sync-133     [001] .....    12.345999: sys_sync -> 0x0"
//   "            sync-133     [001] .....    12.345700: writeback_queue: bdi 254:0: sb_dev 254:0
//        nr_pages=9223372036854775807 sync_mode=1 kupdate=0 range_cyclic=0 background=0
//        reason=sync cgroup_ino=23"
// plus "CPU:N [LOST M EVENTS]" (or "CPU:N [LOST EVENTS]": count unknown) overrun markers,
// recognised only from column 0 (event lines always start with comm padding).
//
// Line layout (kernel/trace/trace_output.c: trace_print_context):
//   "%16s-%-7d " comm-tid, [optional "(%7d) " or "(-------) " tgid with record-tgid],
//   "[%03d] " cpu, [optional irq-info flags like "....." or "d..1." (4 chars on old
//   kernels)], " %5lu.%06lu" seconds.micros (or " %12llu" for counter clocks), ": ", body.
// comm may hold spaces, '-', '(' and ')': the tid is the digits after the last '-' before
// the "[CPU]" field, which must start within the first 256 bytes of the line; leading
// padding is removed from comm. A trailing "\n" / "\r\n" is
// removed; any other control byte is kept in comm/body as printed, NUL is an error.
//
// Bodies interpreted (kernel/trace/trace_syscalls.c, include/trace/events/writeback.h):
//   "sys_NAME(ARG: HEX, ...)"  -> SyscallEnter; ARG values are hex with or without "0x"
//                                 ("type ARG: HEX" with the verbose option). An argument
//                                 named "fd" sets `fd` (low 32 bits, as a signed int).
//   "sys_NAME -> 0xHEX"        -> SyscallExit; `ret` is the 64-bit value as signed
//                                 (0xfffffffffffffffb -> -5).
//   "writeback_queue: bdi NAME: sb_dev MAJ:MIN nr_pages=N sync_mode=N kupdate=N
//    range_cyclic=N background=N reason=WORD cgroup_ino=N" -> WritebackQueue.
// Any other well-formed line is Kind::Other (comm/tid/cpu/timestamp filled). A body that
// starts like one of the above but is malformed (truncated, bad number) is an error.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
  std::optional<uint32_t> tgid;  // only with the record-tgid option and a known tgid
  // Seconds.micros as microseconds; for clocks printed as one integer (counter, x86-tsc)
  // the raw integer.
  uint64_t timestampUsec = 0;
  std::string syscall;         // "sync", "syncfs", "fsync", ... for enter/exit
  std::optional<int64_t> ret;  // exit only
  std::optional<int64_t> fd;   // enter of fd-taking syscalls (syncfs, fsync, ...)
  std::vector<std::pair<std::string, uint64_t>> args;  // enter: all arguments, in order
  std::optional<DevNum> bdi;          // writeback_queue, when the bdi name is "MAJ:MIN"
  std::string bdiName;                // writeback_queue: bdi name as printed ("254:0", ...)
  std::optional<DevNum> sbDev;        // writeback_queue
  std::optional<int64_t> nrPages;     // writeback_queue
  std::optional<int64_t> syncMode;    // writeback_queue: 0 WB_SYNC_NONE, 1 WB_SYNC_ALL
  std::string reason;                 // writeback_queue: "sync", "background", ...
  std::optional<uint64_t> cgroupIno;  // writeback_queue
  uint64_t lostEvents = 0;            // LostEvents; 0 = count unknown ("[LOST EVENTS]")
  std::string body;                   // the event text after "TIMESTAMP: " (Other included)
};

// Returns Kind::Other for well-formed lines of events we do not interpret; an error only
// for lines that are not trace lines at all.
Result<TraceEvent> parseTraceLine(std::string_view line);

}  // namespace cxiosync
