// SPDX-License-Identifier: GPL-2.0-or-later
// Must not compile: sense_includes_core may not see daemon/core/daemon.h
// (tests/layering/CMakeLists.txt).
#include "daemon/core/daemon.h"
