// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// a{sv} dictionaries on the wire (options in, properties out), shared by the manager
// (wire.h) and the loop interface (loop_wire.h).
#include <map>
#include <string>

#include <sdbus-c++/sdbus-c++.h>

namespace cxiosync::dbus::wire {

using Options = std::map<std::string, sdbus::Variant>;

// Reads o[key] into out when present (absent: out unchanged, true); false with bad = key when
// the value has another D-Bus type.
template <class T>
bool takeOption(const Options& o, const char* key, T& out, std::string& bad) {
  auto it = o.find(key);
  if (it == o.end()) return true;
  if (!it->second.containsValueOfType<T>()) {
    bad = key;
    return false;
  }
  out = it->second.get<T>();
  return true;
}

}  // namespace cxiosync::dbus::wire
