#pragma once
// cgroup v2 `cgroup.events`: "populated 0|1\nfrozen 0|1\n".
#include <string_view>

#include "policy/result.h"

namespace cxiosync {

struct CgroupEvents {
  bool populated = false;
  bool frozen = false;
};

Result<CgroupEvents> parseCgroupEvents(std::string_view text);

}  // namespace cxiosync
