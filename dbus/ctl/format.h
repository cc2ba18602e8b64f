// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// cxiosyncctl's human units and tables: the shared ones of policy/output (cxiosync-loop
// prints through the same model).
#include "policy/output/format.h"
#include "policy/output/table.h"

namespace cxiosync::ctl {

using output::Cell;
using output::Color;
using output::Column;
using output::displayWidth;
using output::formatBytes;
using output::formatDuration;
using output::formatIops;
using output::formatRate;
using output::formatTimestamp;
using output::Table;

}  // namespace cxiosync::ctl
