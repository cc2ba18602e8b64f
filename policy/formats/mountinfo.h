// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// /proc/PID/mountinfo (proc(5); fs/proc_namespace.c: show_mountinfo):
//   "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
// Fields are separated by single spaces (the source may be an empty string, which shows as
// two spaces). Root, mount point, fs type and source are octal-escaped by the kernel
// (\040 space, \011 tab, \012 newline, \134 backslash) and are returned unescaped; a
// backslash not followed by three octal digits (<= \377) is kept as is; an escaped NUL
// (\000) is an error. Options and super options are returned verbatim. Zero or more optional
// fields ("shared:N", "master:N", "propagate_from:N", "unbindable") precede the "-"
// separator. Blank lines are skipped; an empty file is an empty list.
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
  std::vector<std::string> optionalFields;  // verbatim, in order
  std::string fsType;
  std::string source;  // unescaped
  std::string superOptions;
};

Result<std::vector<MountInfoEntry>> parseMountInfo(std::string_view text);

}  // namespace cxiosync
