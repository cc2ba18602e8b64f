// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// `detector: auto|tracefs|procfs`: builds the detector and says which and why.
#include <memory>
#include <string>

#include "daemon/kernel/proc_fs.h"
#include "daemon/kernel/trace_fs.h"
#include "daemon/sense/detector.h"
#include "policy/config/knobs.h"

namespace cxiosync {

struct DetectorChoice {
  std::unique_ptr<SyncDetector> detector;
  DetectorKind kind = DetectorKind::Procfs;  // never Auto
  std::string reason;                        // e.g. "tracefs instance cxiosync-42 with 6 events" or
                       // "procfs: tracefs unusable: /sys/kernel/tracing/...: EACCES"
};

// tracefs may be null (root not mounted). detector: tracefs fails when tracefs is unusable;
// auto falls back to procfs; procfs never fails. The returned detector keeps references to
// `tracefs` and `proc`: they must outlive it.
Result<DetectorChoice> makeDetector(const GlobalSettings& settings, TraceFs* tracefs,
                                    const ProcFs& proc);

}  // namespace cxiosync
