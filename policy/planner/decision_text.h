// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The words of the planner's decisions (StartBoost::reason, Refuse::detail): how limits,
// amounts, durations and syncers read in a log line. Pure text, no state.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "policy/config/knobs.h"
#include "policy/formats/io_max.h"
#include "policy/model/snapshot.h"

namespace cxiosync {

// An io.max value: "max" for kUnlimited (or an absent key), else the number.
std::string fmtLimit(uint64_t v);
std::string fmtLimit(const std::optional<uint64_t>& v);

// "32.0 MiB" from 1 MiB up (truncated to tenths), else "512 B".
std::string fmtBytes(uint64_t b);

// "1.5s": seconds with tenths, truncated.
std::string fmtSeconds(std::chrono::nanoseconds d);

// "wbps 1048576 -> max, wiops 100 -> max": the keys that change ("no change" if none).
std::string limitChange(const IoLimits& from, const IoLimits& to);

// "sync by 100/101 'backup' in /system.slice/backup.service".
std::string describeSyncer(const Syncer& s);

// "inherit", "max" or "1048576 B/s".
std::string describeCeiling(const BoostCeiling& c);

}  // namespace cxiosync
