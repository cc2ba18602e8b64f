// SPDX-License-Identifier: GPL-2.0-or-later
// Must not compile: dbus_includes_ctl may not see dbus/ctl/cli.h (tests/layering/CMakeLists.txt).
#include "dbus/ctl/cli.h"
