// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// org.cxiosync1.Loop on the wire: the property dict (GetAll / LoopList) and LoopSetup's
// options, both directions. Property names are the dict keys (see org.cxiosync1.xml).
#include <map>
#include <string>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

#include "dbus/loop_backend.h"
#include "dbus/wire_options.h"
#include "policy/result.h"

namespace cxiosync::dbus::wire {

using LoopProps = Options;
using LoopEntry = sdbus::Struct<sdbus::ObjectPath, LoopProps>;  // (oa{sv})

inline constexpr const char* kLoopInterface = "org.cxiosync1.Loop";
inline constexpr const char* kLoopPathPrefix = "/org/cxiosync1/loop/";

std::string loopObjectPath(const std::string& name);  // "/org/cxiosync1/loop/loop3"
// "loop3" from the object path; "" when it is not one of ours.
std::string loopNameOfPath(const std::string& path);
// Whether a name is loopN or nbdN (policy/blockdev/loop_vocab.h).
using cxiosync::validLoopName;

// Through the property table (loop_props.h); every string goes through wire::text (a backing
// file's name is any bytes).
LoopProps toWire(const LoopInfo& d);
// Unknown keys are ignored; a known key with the wrong type is EPROTO.
Result<LoopInfo> loopFromWire(const LoopProps& props);

// Options of LoopSetup (read_only, offset, size_limit, block_size, direct_io, autoclear,
// partscan, backend, workers, queue_depth, nbd_timeout, interactive). Unknown keys, wrong
// types, bad values: EINVAL.
struct LoopSetupRequest {
  LoopSetupOptions options;
  bool interactive = false;
};
// Whether LoopSetup needs the caller's pid: an nbd server may start in the caller's cgroup
// (server_cgroup "caller", or the default for uid != 0) unless the kernel loop was asked.
bool loopSetupNeedsCallerPid(const LoopSetupOptions& options, uint32_t uid);
Result<LoopSetupRequest> parseLoopSetupOptions(const std::map<std::string, sdbus::Variant>& o);
std::map<std::string, sdbus::Variant> loopSetupOptionsToWire(const LoopSetupRequest& r);

// Options of the Loop methods: interactive b, force b. And LoopList: all b.
struct LoopCallOptions {
  bool interactive = false;
  bool force = false;
  bool all = false;
};
Result<LoopCallOptions> parseLoopCallOptions(const std::map<std::string, sdbus::Variant>& o,
                                             bool listCall);

}  // namespace cxiosync::dbus::wire
