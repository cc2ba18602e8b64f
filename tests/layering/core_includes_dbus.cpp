// SPDX-License-Identifier: GPL-2.0-or-later
// Must not compile: core_includes_dbus may not see dbus/manager_backend.h
// (tests/layering/CMakeLists.txt).
#include "dbus/manager_backend.h"
