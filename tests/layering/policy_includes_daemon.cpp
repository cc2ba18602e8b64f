// SPDX-License-Identifier: GPL-2.0-or-later
// Must not compile: policy_includes_daemon may not see daemon/kernel/fs.h
// (tests/layering/CMakeLists.txt).
#include "daemon/kernel/fs.h"
