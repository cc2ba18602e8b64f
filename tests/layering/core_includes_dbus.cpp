// Must not compile: core_includes_dbus may not see dbus/manager_backend.h
// (tests/layering/CMakeLists.txt).
#include "dbus/manager_backend.h"
