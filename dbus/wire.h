// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The D-Bus wire types of org.cxiosync1.Manager (must match org.cxiosync1.xml; the generated
// adaptor's pure virtual signatures enforce it at compile time) and conversions:
// backend structs → wire (server), wire → views (client).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

#include "dbus/manager_backend.h"
#include "dbus/views.h"
#include "dbus/wire_options.h"

namespace cxiosync::dbus::wire {

using Limit = sdbus::Struct<std::string, uint64_t, uint64_t, uint64_t, uint64_t>;  // (stttt)
using Effective = sdbus::Struct<std::string, uint64_t, uint64_t, std::string, std::string>;
using Policy = sdbus::Struct<std::string, std::string, std::string>;  // (sss)
using Cgroup = sdbus::Struct<std::string, std::vector<Limit>, std::vector<Effective>, uint64_t,
                             uint64_t, std::vector<Policy>, bool>;
using Limits4 = sdbus::Struct<uint64_t, uint64_t, uint64_t, uint64_t>;
using Boost = sdbus::Struct<std::string, std::string, std::string, Limits4, Limits4, uint64_t,
                            uint64_t, std::vector<int64_t>, std::string, bool>;
using Syncer = sdbus::Struct<int64_t, int64_t, std::string, std::string, std::string, std::string,
                             uint64_t, std::string>;

// Daemon bytes (cgroup and file names, command names, messages quoting them) as D-Bus text:
// D-Bus strings must be UTF-8, kernel names need not be (a cgroup `$'\xff'` made in a
// delegated subtree, a comm set by prctl), and one such string makes sd-bus refuse the whole
// reply or signal (issue 16). policy/bytes_text.h's textFromBytes, the one reversible \xNN
// escape; inputs that name a cgroup accept it back (parseCgroupText). Every string the
// server sends goes through here: toWire below, the signals, and error messages (reply.h).
std::string text(std::string_view bytes);

// "default", "runtime", "FILE:LINE", "FILE", or "config"/"drop-in" when no file is known.
std::string describeSource(const ValueSource& source);
// The (knob, value, source) rows of an effective policy, in IDL order.
std::vector<PolicyRow> policyRows(const EffectivePolicy& policy);

// Every string in these goes through text().
Options toWire(const StatusInfo& s);
Cgroup toWire(const CgroupInfo& c);
Boost toWire(const BoostInfo& b);
Syncer toWire(const SyncerInfo& s);

// Unknown keys are ignored; a known key with the wrong type is an error (EPROTO).
Result<StatusView> statusFromWire(const Options& status);
CgroupView fromWire(const Cgroup& c);
BoostView fromWire(const Boost& b);
SyncerView fromWire(const Syncer& s);

// Keys → signatures and boolean values of an options dict, for parseMethodOptions.
void splitOptions(const Options& options, std::map<std::string, std::string>& keys,
                  std::map<std::string, bool>& bools);

}  // namespace cxiosync::dbus::wire
