// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// A configuration file handed to a pure parser: its name (for messages and ValueSource) and text.
#include <string>

namespace cxiosync {

struct ConfigText {
  std::string file;
  std::string text;
};

}  // namespace cxiosync
