// SPDX-License-Identifier: GPL-2.0-or-later
// Must not compile: loop_includes_nbd may not see daemon/blockdev/nbd/nbd_manager.h
// (tests/layering/CMakeLists.txt).
#include "daemon/blockdev/nbd/nbd_manager.h"
