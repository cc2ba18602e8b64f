// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/knobs.h"

namespace cxiosync {

std::string ValueSource::describe() const {
  switch (kind) {
    case Kind::Default:
      return "default";
    case Kind::Runtime:
      return "runtime";
    case Kind::Yaml:
    case Kind::DropIn:
      break;
  }
  if (line > 0) return file + ":" + std::to_string(line);
  return file;
}

}  // namespace cxiosync
