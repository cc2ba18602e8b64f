// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sense/auto_detector.h"

#include "daemon/sense/proc_detector.h"
#include "daemon/sense/trace_detector.h"

namespace cxiosync {

Result<DetectorChoice> makeDetector(const GlobalSettings& settings, TraceFs* tracefs,
                                    const ProcFs& proc) {
  DetectorChoice choice;
  std::string whyNotTracefs;
  if (settings.detector != DetectorKind::Procfs) {
    if (!tracefs) {
      whyNotTracefs = "tracefs is not mounted";
    } else {
      TraceDetectorOptions to;
      to.watchFsync = settings.watchFsync;
      to.rescanGap = settings.pollInterval;
      auto det = TraceDetector::start(*tracefs, proc, to);
      if (det) {
        choice.kind = DetectorKind::Tracefs;
        choice.reason = "tracefs: instance " + tracefs->root() + "/instances/" +
                        (*det)->instance() + " with " +
                        std::to_string(TraceDetector::eventsFor(settings.watchFsync).size()) +
                        " events" + (settings.detector == DetectorKind::Auto ? " (auto)" : "");
        choice.detector = std::move(*det);
        return choice;
      }
      whyNotTracefs = det.error().message;
    }
    if (settings.detector == DetectorKind::Tracefs) {
      return Error{0, "detector tracefs unusable: " + whyNotTracefs};
    }
  }
  ProcDetectorOptions po;
  po.watchFsync = settings.watchFsync;
  choice.detector = std::make_unique<ProcDetector>(proc, po);
  choice.kind = DetectorKind::Procfs;
  choice.reason = settings.detector == DetectorKind::Procfs
                      ? "procfs: configured (detector: procfs)"
                      : "procfs: tracefs unusable: " + whyNotTracefs;
  choice.reason += ", polling every " + std::to_string(settings.pollInterval.count()) + " ms";
  return choice;
}

}  // namespace cxiosync
