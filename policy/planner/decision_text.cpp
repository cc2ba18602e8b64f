// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/planner/decision_text.h"

#include "policy/config/values.h"

namespace cxiosync {

std::string fmtLimit(uint64_t v) {
  return v == kUnlimited ? "max" : std::to_string(v);
}
std::string fmtLimit(const std::optional<uint64_t>& v) {
  return fmtLimit(v ? *v : kUnlimited);
}

std::string fmtBytes(uint64_t b) {
  if (b >= (1ull << 20)) {
    uint64_t tenths = b * 10 / (1ull << 20);
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " MiB";
  }
  return std::to_string(b) + " B";
}

std::string fmtSeconds(std::chrono::nanoseconds d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return std::to_string(ms / 1000) + "." + std::to_string((ms % 1000) / 100) + "s";
}

std::string limitChange(const IoLimits& from, const IoLimits& to) {
  std::string out;
  auto key = [&](const char* name, const std::optional<uint64_t>& a,
                 const std::optional<uint64_t>& b) {
    if (a == b) return;
    if (!out.empty()) out += ", ";
    out += name;
    out += ' ';
    out += fmtLimit(a);
    out += " -> ";
    out += fmtLimit(b);
  };
  key("rbps", from.rbps, to.rbps);
  key("wbps", from.wbps, to.wbps);
  key("riops", from.riops, to.riops);
  key("wiops", from.wiops, to.wiops);
  return out.empty() ? "no change" : out;
}

std::string describeSyncer(const Syncer& s) {
  return std::string(syncSyscallName(s.syscall)) + " by " + std::to_string(s.pid) + "/" +
         std::to_string(s.tid) + " '" + s.comm + "' in " + s.cgroup.display();
}

std::string describeCeiling(const BoostCeiling& c) {
  return formatBoostCeiling(c) + (c.kind == BoostCeiling::Kind::Bytes ? " B/s" : "");
}

}  // namespace cxiosync
