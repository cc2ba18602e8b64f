// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// What cxiosyncd checks before it starts, so that a host where it cannot work is refused
// with one line naming the fix (issue 27) instead of a daemon that says "ready" and does
// nothing: a hybrid or legacy cgroup layout (the io controller bound to cgroup v1's blkio, no
// io.max anywhere), and a forced tracefs detector without tracefs.
#include <string>

#include "policy/result.h"

namespace cxiosync {

// `root` (--cgroup-root) is a cgroup2 root whose cgroup.controllers lists "io". A fake tree
// passes with a cgroup.controllers file that lists io. The error message is the whole line.
Status checkCgroupRoot(const std::string& root);

// `root` (--tracefs-root) is a mounted tracefs (it has instances/ and events/), for
// `detector: tracefs`; `auto` falls back to procfs by itself.
Status checkTracefsRoot(const std::string& root);

}  // namespace cxiosync
