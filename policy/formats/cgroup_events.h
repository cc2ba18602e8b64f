// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// cgroup v2 `cgroup.events`: "populated 0|1\nfrozen 0|1\n".
// `populated` is required; `frozen` (Linux 5.2+) defaults to false when absent. Values must be
// exactly 0 or 1. Unknown keys are ignored (their values are not checked). A malformed line
// ("KEY VALUE" expected), a duplicate known key or an empty file is an error.
#include <string_view>

#include "policy/result.h"

namespace cxiosync {

struct CgroupEvents {
  bool populated = false;
  bool frozen = false;
};

Result<CgroupEvents> parseCgroupEvents(std::string_view text);

}  // namespace cxiosync
