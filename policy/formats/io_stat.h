// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// cgroup v2 `io.stat`: "MAJ:MIN key=value ..." per device. Keys may be absent (a device
// line with no keys at all, e.g. "7:0 ") or extra (cost.*, io.latency keys): parsed
// generically, unknown keys kept.
//
// Kernel 6.1 (block/blk-cgroup.c: blkcg_print_one_stat) prints "MAJ:MIN " then, only when a
// device saw I/O, "rbytes= wbytes= rios= wios= dbytes= dios=", then per-policy extras:
// iocost " cost.vrate=100.00 cost.usage=N cost.wait=N cost.indebt=N cost.indelay=N",
// io.latency " depth=max|N avg_lat=N win=N", debug " use_delay=-1 delay_nsec=N".
//
// Parsing rules:
//  - The six standard keys (rbytes wbytes rios wios dbytes dios) must be unsigned 64-bit
//    decimals; anything else for them is an error.
//  - Any other key whose value is an unsigned decimal goes to `counters`; any other value
//    ("max", "100.00", "-1", even empty) is kept verbatim in `other`. Never an error.
//  - A token without '=' or with an empty key, a duplicate key on one line and a duplicate
//    device line are errors. Blank lines are skipped; an empty file is an empty list.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/model/dev_num.h"
#include "policy/result.h"

namespace cxiosync {

struct IoStatEntry {
  DevNum dev;
  std::map<std::string, uint64_t, std::less<>> counters;  // rbytes, wbytes, rios, wios, dbytes, ...
  std::map<std::string, std::string, std::less<>> other;  // non-integer values, verbatim
  // The counter `key`, nullopt when absent (or when its value was not an integer).
  std::optional<uint64_t> get(std::string_view key) const;
};

Result<std::vector<IoStatEntry>> parseIoStat(std::string_view text);

}  // namespace cxiosync
