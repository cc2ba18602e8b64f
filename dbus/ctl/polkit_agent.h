// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// A polkit text agent for the duration of one privileged call, as systemctl does: when the
// caller is not root, may be asked (no --no-ask-password) and sits at a terminal, run
// `pkttyagent --notify-fd N --fallback` (it registers for our session only if no other agent
// does) and wait until it says it is registered. Stopped (SIGTERM) when the guard goes away.
#include <sys/types.h>

namespace cxiosync::ctl {

class PolkitAgent {
 public:
  // Starts the agent if useful: `allowed`, euid != 0, stdin is a terminal, pkttyagent exists.
  explicit PolkitAgent(bool allowed);
  ~PolkitAgent();
  PolkitAgent(const PolkitAgent&) = delete;
  PolkitAgent& operator=(const PolkitAgent&) = delete;
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

}  // namespace cxiosync::ctl
