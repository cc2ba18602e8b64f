#pragma once
// /proc/PID/mountinfo (proc(5)). Paths are octal-escaped (\040 space, \011, \012, \134).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "policy/model/dev_num.h"
#include "policy/result.h"

namespace cxiosync {

struct MountInfoEntry {
  uint64_t mountId = 0;
  uint64_t parentId = 0;
  DevNum dev;
  std::string root;        // unescaped
  std::string mountPoint;  // unescaped
  std::string options;
  std::string fsType;
  std::string source;  // unescaped
  std::string superOptions;
};

Result<std::vector<MountInfoEntry>> parseMountInfo(std::string_view text);

}  // namespace cxiosync
