// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/dropin.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>

#include "policy/config/values.h"

namespace cxiosync {

namespace {

constexpr std::string_view kWhitespace = " \t\n\r";

std::string_view strip(std::string_view s) {
  auto b = s.find_first_not_of(kWhitespace);
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(kWhitespace);
  return s.substr(b, e - b + 1);
}

struct KeyInfo {
  std::string_view name;
  DropInKey key;
};
constexpr std::array<KeyInfo, 7> kKeys = {{
    {"SyncIsolation", DropInKey::SyncIsolation},
    {"Boost", DropInKey::Boost},
    {"BoostCeiling", DropInKey::BoostCeiling},
    {"MaxBoostSec", DropInKey::MaxBoostSec},
    {"BoostBudget", DropInKey::BoostBudget},
    {"Tenant", DropInKey::Tenant},
    {"TenantSync", DropInKey::TenantSync},
}};

std::string_view knobFor(DropInKey key) {
  switch (key) {
    case DropInKey::SyncIsolation:
      return kKnobSyncIsolation;
    case DropInKey::Boost:
      return kKnobBoost;
    case DropInKey::BoostCeiling:
      return kKnobBoostCeiling;
    case DropInKey::MaxBoostSec:
      return kKnobMaxBoostSeconds;
    case DropInKey::Tenant:
      return kKnobTenant;
    case DropInKey::TenantSync:
      return kKnobTenantSync;
    case DropInKey::BoostBudget:
      break;
  }
  return kKnobBoostBudget;
}

Error lineError(const std::string& file, int line, std::string_view key,
                const std::string& message) {
  std::string out = file + ":" + std::to_string(line) + ": ";
  if (!key.empty()) out += "[" + std::string(kDropInSection) + "] " + std::string(key) + ": ";
  return makeError(out + message);
}

// systemd-style unquoting of a whole value: "..." or '...' with \\, \" and \' escapes.
// Values that do not start with a quote are taken literally.
Result<std::string> unquote(std::string_view v) {
  if (v.empty() || (v.front() != '"' && v.front() != '\'')) return std::string(v);
  const char q = v.front();
  std::string out;
  size_t i = 1;
  for (; i < v.size(); ++i) {
    char c = v[i];
    if (c == '\\' && i + 1 < v.size()) {
      char n = v[i + 1];
      if (n == '\\' || n == '"' || n == '\'') {
        out += n;
        ++i;
        continue;
      }
      out += c;
      continue;
    }
    if (c == q) break;
    out += c;
  }
  if (i >= v.size()) return makeError("unbalanced quotes in value");
  if (i + 1 != v.size()) return makeError("unexpected text after the closing quote");
  return out;
}

}  // namespace

std::string_view dropInKeyName(DropInKey key) {
  for (const auto& k : kKeys) {
    if (k.key == key) return k.name;
  }
  return {};
}

Result<std::vector<DropInAssignment>> parseDropInText(const ConfigText& file) {
  std::vector<DropInAssignment> out;
  std::string_view text = file.text;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);

  bool inOurSection = false;
  std::optional<std::string> continuation;
  int continuationLine = 0;
  int lineNo = 0;

  auto handle = [&](std::string_view logical, int line) -> Status {
    std::string_view l = strip(logical);
    if (l.empty() || l.front() == '#' || l.front() == ';') return Ok{};
    if (l.front() == '[') {
      if (l.size() < 2 || l.back() != ']') {
        return lineError(file.file, line, "", "invalid section header '" + std::string(l) + "'");
      }
      inOurSection = l.substr(1, l.size() - 2) == kDropInSection;
      return Ok{};
    }
    if (!inOurSection) return Ok{};  // systemd's sections (and anything before the first one)
    auto eq = l.find('=');
    if (eq == std::string_view::npos) {
      return lineError(file.file, line, "",
                       "missing '=' in '" + std::string(l) + "' (expected Key=value)");
    }
    std::string_view key = strip(l.substr(0, eq));
    std::string_view rawValue = strip(l.substr(eq + 1));
    const KeyInfo* info = nullptr;
    for (const auto& k : kKeys) {
      if (k.name == key) info = &k;
    }
    if (info == nullptr) {
      return lineError(file.file, line, key,
                       "unknown key (expected SyncIsolation, Boost, BoostCeiling, MaxBoostSec, "
                       "BoostBudget, Tenant or TenantSync)");
    }
    auto value = unquote(rawValue);
    if (!value) return lineError(file.file, line, key, value.error().message);
    if (!value->empty()) {
      PolicySettings scratch;
      auto st = setPolicyKnob(scratch, knobFor(info->key), *value, ValueSource{});
      if (!st) return lineError(file.file, line, key, st.error().message);
    }
    out.push_back(DropInAssignment{info->key, std::move(*value), line});
    return Ok{};
  };

  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view raw =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++lineNo;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);

    // Comment lines are skipped entirely, even in the middle of a continued line (systemd).
    std::string_view lead = strip(raw);
    if (!lead.empty() && (lead.front() == '#' || lead.front() == ';')) continue;

    std::string joined;
    if (continuation) {
      joined = *continuation + std::string(raw);
    } else {
      joined = std::string(raw);
      continuationLine = lineNo;
    }
    // A backslash as the very last character continues the line, unless it is itself escaped.
    bool escaped = false;
    for (char c : joined) escaped = escaped ? false : c == '\\';
    if (escaped) {
      joined.back() = ' ';
      continuation = std::move(joined);
      continue;
    }
    continuation.reset();
    auto st = handle(joined, continuationLine);
    if (!st) return st.error();
  }
  if (continuation) {
    auto st = handle(*continuation, continuationLine);
    if (!st) return st.error();
  }
  return out;
}

Result<PolicySettings> parseDropIns(const std::vector<ConfigText>& orderedFiles) {
  // Later assignment wins; an empty assignment resets. Track the final text per key.
  std::map<DropInKey, std::optional<std::pair<std::string, ValueSource>>> last;
  for (const auto& file : orderedFiles) {
    auto assignments = parseDropInText(file);
    if (!assignments) return assignments.error();
    for (auto& a : *assignments) {
      if (a.value.empty()) {
        last[a.key].reset();
      } else {
        last[a.key] = std::pair{a.value, ValueSource::dropIn(file.file, a.line)};
      }
    }
  }
  PolicySettings out;
  for (const auto& [key, entry] : last) {
    if (!entry) continue;
    auto st = setPolicyKnob(out, knobFor(key), entry->first, entry->second);
    if (!st) return st.error();  // unreachable: validated while parsing
  }
  return out;
}

// ---- precedence ----

const std::vector<std::string>& systemUnitSearchPath() {
  static const std::vector<std::string> kPath = {
      "/etc/systemd/system.control", "/run/systemd/system.control",
      "/run/systemd/transient",      "/run/systemd/generator.early",
      "/etc/systemd/system",         "/etc/systemd/system.attached",
      "/run/systemd/system",         "/run/systemd/system.attached",
      "/run/systemd/generator",      "/usr/local/lib/systemd/system",
      "/usr/lib/systemd/system",     "/lib/systemd/system",
      "/run/systemd/generator.late",
  };
  return kPath;
}

namespace {

constexpr std::array<std::string_view, 11> kUnitTypes = {"service", "socket",    "target", "device",
                                                         "mount",   "automount", "swap",   "timer",
                                                         "path",    "slice",     "scope"};

bool validChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' ||
         c == '-' || c == '_' || c == '.' || c == '\\';
}

struct UnitName {
  std::string_view prefix;    // before '@' (or before ".type")
  bool hasAt = false;         // template or instance
  std::string_view instance;  // after '@', empty for a template
  std::string_view type;      // "slice"
};

std::optional<UnitName> splitUnitName(std::string_view unit) {
  if (unit.empty() || unit.size() > 255) return std::nullopt;
  auto dot = unit.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  UnitName n;
  n.type = unit.substr(dot + 1);
  if (std::find(kUnitTypes.begin(), kUnitTypes.end(), n.type) == kUnitTypes.end()) {
    return std::nullopt;
  }
  std::string_view body = unit.substr(0, dot);
  auto at = body.find('@');
  if (at != std::string_view::npos) {
    n.hasAt = true;
    n.prefix = body.substr(0, at);
    n.instance = body.substr(at + 1);
    for (char c : n.instance) {
      if (!validChar(c) && c != '@') return std::nullopt;
    }
  } else {
    n.prefix = body;
  }
  if (n.prefix.empty()) return std::nullopt;
  for (char c : n.prefix) {
    if (!validChar(c)) return std::nullopt;
  }
  return n;
}

bool isValidSliceName(std::string_view unit) {
  auto n = splitUnitName(unit);
  if (!n || n->type != "slice" || n->hasAt) return false;
  if (unit == "-.slice") return true;
  std::string_view p = n->prefix;
  return p.front() != '-' && p.back() != '-' && p.find("--") == std::string_view::npos;
}

void findDirs(const std::string& searchDir, const std::string& name,
              std::vector<std::string>& out) {
  out.push_back(searchDir + "/" + name + ".d");
  if (std::find(kUnitTypes.begin(), kUnitTypes.end(), name) != kUnitTypes.end()) return;
  auto n = splitUnitName(name);
  if (!n) return;
  if (n->hasAt && !n->instance.empty()) {
    findDirs(searchDir, std::string(n->prefix) + "@." + std::string(n->type), out);
  }
  // Dash prefixes: "a-b-c" -> "a-b-", then (via recursion) "a-". Mirrors systemd's
  // unit_file_find_dirs(): a trailing dash is chopped once before looking for the next one.
  std::string prefix(n->prefix);
  bool chopped = false;
  for (;;) {
    auto dash = prefix.rfind('-');
    if (dash == std::string::npos || dash == 0) return;
    if (dash + 1 < prefix.size() || chopped) {
      prefix.resize(dash + 1);
      break;
    }
    prefix.resize(dash);
    chopped = true;
  }
  std::string built = prefix;
  if (n->hasAt) built += "@" + std::string(n->instance);
  built += "." + std::string(n->type);
  findDirs(searchDir, built, out);
}

}  // namespace

std::vector<std::string> dropInDirsFor(std::string_view unit,
                                       const std::vector<std::string>& searchPath) {
  auto n = splitUnitName(unit);
  if (!n) return {};
  std::vector<std::string> dirs;
  for (const auto& p : searchPath) findDirs(p, std::string(unit), dirs);
  for (const auto& p : searchPath) dirs.push_back(p + "/" + std::string(n->type) + ".d");
  // Keep the first occurrence of each directory.
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (auto& d : dirs) {
    if (seen.insert(d).second) out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> orderDropInFiles(const std::vector<std::string>& dirs,
                                          const std::vector<FoundDropIn>& found) {
  constexpr std::string_view kSuffix = ".conf";
  std::map<std::string, std::string> byName;  // file name -> full path; sorted by name (strcmp)
  for (const auto& dir : dirs) {
    for (const auto& f : found) {
      if (f.dir != dir) continue;
      if (f.name.size() <= kSuffix.size() ||
          f.name.compare(f.name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
        continue;
      }
      byName.emplace(f.name, dir + "/" + f.name);  // first (highest priority) wins
    }
  }
  std::vector<std::string> out;
  out.reserve(byName.size());
  for (auto& [name, path] : byName) out.push_back(std::move(path));
  return out;
}

bool isValidUnitName(std::string_view unit) {
  auto n = splitUnitName(unit);
  if (!n) return false;
  if (n->hasAt && n->type == "slice") return false;
  return true;
}

std::string cgroupEscape(std::string_view name) {
  // systemd 252 src/basic/cgroup-util.c cg_escape() and cgroup_controller_table.
  static constexpr std::array<std::string_view, 13> kControllers = {
      "cpu",
      "cpuacct",
      "cpuset",
      "io",
      "blkio",
      "memory",
      "devices",
      "pids",
      "bpf-firewall",
      "bpf-devices",
      "bpf-foreign",
      "bpf-socket-bind",
      "bpf-restrict-network-interfaces"};
  bool prefix = name.empty() || name[0] == '_' || name[0] == '.' || name == "notify_on_release" ||
                name == "release_agent" || name == "tasks" || name.substr(0, 7) == "cgroup.";
  if (!prefix) {
    size_t dot = name.rfind('.');
    if (dot != std::string_view::npos) {
      for (std::string_view c : kControllers) {
        if (name.substr(0, dot) == c) {
          prefix = true;
          break;
        }
      }
    }
  }
  return prefix ? "_" + std::string(name) : std::string(name);
}

std::string cgroupUnescape(std::string_view name) {
  if (name.size() > 1 && name[0] == '_' && cgroupEscape(name.substr(1)) == name)
    return std::string(name.substr(1));
  return std::string(name);
}

Result<CgroupPath> sliceUnitToCgroupPath(std::string_view unit) {
  if (!isValidSliceName(unit)) {
    return makeError("'" + std::string(unit) + "' is not a valid slice unit name");
  }
  if (unit == "-.slice") return CgroupPath();
  std::string_view prefix = unit.substr(0, unit.size() - std::string_view(".slice").size());
  std::string path;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i] == '-') path += "/" + cgroupEscape(std::string(prefix.substr(0, i)) + ".slice");
  }
  path += "/" + cgroupEscape(unit);
  return CgroupPath::parse(path);
}

Result<std::string> cgroupPathToSliceUnit(const CgroupPath& path) {
  if (path.isRoot()) return std::string("-.slice");
  const std::string& rel = path.relative();
  std::string parentPrefix;
  std::string last;
  size_t pos = 0;
  while (pos <= rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string::npos) slash = rel.size();
    const std::string raw = rel.substr(pos, slash - pos);
    const std::string comp = cgroupUnescape(raw);
    pos = slash + 1;
    auto bad = [&] {
      return makeError("cgroup " + path.display() + " is not a slice: '" + raw +
                       "' is not the slice systemd nests there");
    };
    if (cgroupEscape(comp) != raw) return bad();  // "/io.slice": systemd names it "/_io.slice"
    if (!isValidSliceName(comp) || comp == "-.slice") return bad();
    std::string prefix = comp.substr(0, comp.size() - 6);
    if (parentPrefix.empty()) {
      if (prefix.find('-') != std::string::npos) return bad();
    } else {
      if (prefix.compare(0, parentPrefix.size() + 1, parentPrefix + "-") != 0) return bad();
      if (prefix.find('-', parentPrefix.size() + 1) != std::string::npos) return bad();
    }
    parentPrefix = prefix;
    last = comp;
  }
  return last;
}

std::string unitForCgroupPath(const CgroupPath& path) {
  if (path.isRoot()) return "-.slice";
  const std::string& rel = path.relative();
  auto slash = rel.rfind('/');
  std::string last = cgroupUnescape(slash == std::string::npos ? rel : rel.substr(slash + 1));
  auto n = splitUnitName(last);
  if (!n || (n->hasAt && n->instance.empty())) return {};  // templates have no cgroup
  if (n->type == "slice") return cgroupPathToSliceUnit(path) ? last : std::string();
  if (!cgroupPathToSliceUnit(path.parent())) return {};
  return last;
}

}  // namespace cxiosync
