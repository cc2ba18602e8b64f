// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// cxiosyncctl loop add|list|show|set|detach: argument checks (pure), rendering (pure) and
// execution over dbus::Client. Client failures propagate as dbus::ClientError (run() maps
// them to exit codes like every other verb).
#include <functional>
#include <string>
#include <vector>

#include "dbus/client.h"
#include "dbus/ctl/cli.h"
#include "dbus/ctl/json.h"
#include "dbus/loop_backend.h"

namespace cxiosync::ctl {

std::string loopUsage();  // the loop lines of --help
Status checkLoopArgs(const Invocation& inv);

// "loop3", "/dev/loop3" or "3" → "loop3"; EINVAL otherwise.
Result<std::string> loopNameArg(const std::string& arg);

Json loopJson(const dbus::LoopInfo& d);
Json loopsJson(const std::vector<dbus::LoopInfo>& list);
std::string loopsText(const std::vector<dbus::LoopInfo>& list, bool legend, bool bold);
std::string loopText(const dbus::LoopInfo& d);

int runLoop(const Invocation& inv, const Io& io, const std::function<dbus::Client&()>& client);

}  // namespace cxiosync::ctl
