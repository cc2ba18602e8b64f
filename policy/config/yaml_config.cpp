// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/yaml_config.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <set>

#include "policy/config/values.h"

namespace cxiosync {

namespace {

// A located error: "file:line:col: path: message".
class Locator {
 public:
  explicit Locator(const std::string& file) : file_(file) {}

  Error at(const YAML::Mark& mark, const std::string& path, const std::string& message) const {
    std::string out = file_;
    if (mark.line >= 0) {
      out += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    }
    out += ": ";
    if (!path.empty()) out += path + ": ";
    out += message;
    return makeError(std::move(out));
  }

  ValueSource source(const YAML::Mark& mark) const {
    return ValueSource::yaml(file_, mark.line >= 0 ? mark.line + 1 : 0);
  }

 private:
  const std::string& file_;
};

std::string nodeKind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

// The scalar text of a value node, or a located "expected a value" error.
Result<std::string> scalar(const Locator& loc, const YAML::Node& node, const YAML::Mark& keyMark,
                           const std::string& path) {
  if (node.IsScalar()) return node.Scalar();
  // An empty value's mark is wherever the next token starts; point at the key instead.
  if (node.IsNull()) return loc.at(keyMark, path, "missing value");
  const YAML::Mark mark = node.Mark().line >= 0 ? node.Mark() : keyMark;
  return loc.at(mark, path, "expected a single value, found " + nodeKind(node));
}

// Iterates a mapping, rejecting non-scalar and duplicate keys. `fn(keyText, keyNode, value)`.
Status forEachKey(
    const Locator& loc, const YAML::Node& map, const std::string& path,
    const std::function<Status(const std::string&, const YAML::Node&, const YAML::Node&)>& fn) {
  std::set<std::string> seen;
  // Copy key and value: yaml-cpp's iterator returns them inside a temporary proxy, so a
  // reference to `it->first` dangles at the end of the statement (ASan: stack-use-after-scope).
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      return loc.at(key.Mark(), path, "keys must be plain names, found " + nodeKind(key));
    }
    const std::string& name = key.Scalar();
    const std::string keyPath = path.empty() ? name : path + "." + name;
    if (!seen.insert(name).second) return loc.at(key.Mark(), keyPath, "duplicate key");
    auto st = fn(name, key, value);
    if (!st) return st;
  }
  return Ok{};
}

template <class T, class Parser>
Status setSourced(const Locator& loc, std::optional<Sourced<T>>& out, const YAML::Node& key,
                  const YAML::Node& value, const std::string& path, Parser parse) {
  auto text = scalar(loc, value, key.Mark(), path);
  if (!text) return text.error();
  auto v = parse(*text);
  const YAML::Mark mark = value.Mark().line >= 0 ? value.Mark() : key.Mark();
  if (!v) return loc.at(mark, path, v.error().message);
  out = Sourced<T>{*v, loc.source(key.Mark())};
  return Ok{};
}

Status parseBudgetNode(const Locator& loc, std::optional<Sourced<BoostBudget>>& out,
                       const YAML::Node& key, const YAML::Node& value, const std::string& path) {
  if (!value.IsMap()) return setSourced(loc, out, key, value, path, parseBoostBudget);
  std::optional<uint32_t> percent;
  std::optional<std::chrono::seconds> window;
  auto st = forEachKey(
      loc, value, path,
      [&](const std::string& name, const YAML::Node& k, const YAML::Node& v) -> Status {
        const std::string sub = path + "." + name;
        if (name != "percent" && name != "window_seconds") {
          return loc.at(k.Mark(), sub, "unknown key (expected percent or window_seconds)");
        }
        auto text = scalar(loc, v, k.Mark(), sub);
        if (!text) return text.error();
        if (name == "percent") {
          auto p = parseBudgetPercent(*text);
          if (!p) return loc.at(v.Mark(), sub, p.error().message);
          percent = *p;
        } else {
          auto w = parseBudgetWindow(*text);
          if (!w) return loc.at(v.Mark(), sub, w.error().message);
          window = *w;
        }
        return Ok{};
      });
  if (!st) return st;
  if (!percent || !window) {
    return loc.at(value.Mark(), path,
                  std::string("missing ") + (!percent ? "percent" : "window_seconds") +
                      " (write e.g. {percent: 25, window_seconds: 120} or \"25% of 120s\")");
  }
  out = Sourced<BoostBudget>{BoostBudget{*percent, *window}, loc.source(key.Mark())};
  return Ok{};
}

Status parseCgroupEntry(const Locator& loc, PolicySettings& settings, const YAML::Node& entry,
                        const YAML::Node& keyNode, const std::string& path) {
  if (entry.IsNull()) return Ok{};  // "/x.slice:" with nothing under it: no settings
  if (!entry.IsMap()) {
    const YAML::Mark mark = entry.Mark().line >= 0 ? entry.Mark() : keyNode.Mark();
    return loc.at(mark, path, "expected a mapping of policy knobs, found " + nodeKind(entry));
  }
  return forEachKey(
      loc, entry, path,
      [&](const std::string& name, const YAML::Node& key, const YAML::Node& value) -> Status {
        const std::string sub = path + "." + name;
        if (name == kKnobSyncIsolation) {
          return setSourced(loc, settings.syncIsolation, key, value, sub, parseBoolean);
        }
        if (name == kKnobBoost) {
          return setSourced(loc, settings.boost, key, value, sub, parseBoostPermission);
        }
        if (name == kKnobBoostCeiling) {
          return setSourced(loc, settings.boostCeiling, key, value, sub, parseBoostCeiling);
        }
        if (name == kKnobMaxBoostSeconds) {
          return setSourced(loc, settings.maxBoost, key, value, sub, parseMaxBoost);
        }
        if (name == kKnobBoostBudget)
          return parseBudgetNode(loc, settings.boostBudget, key, value, sub);
        if (name == kKnobTenant) {
          return setSourced(loc, settings.tenant, key, value, sub, parseBoolean);
        }
        if (name == kKnobTenantSync) {
          return setSourced(loc, settings.tenantSync, key, value, sub, parseTenantSync);
        }
        return loc.at(key.Mark(), sub,
                      "unknown key (expected sync_isolation, boost, boost_ceiling, "
                      "max_boost_seconds, boost_budget, tenant or tenant_sync)");
      });
}

Status parseCgroups(const Locator& loc, ConfigFragment& out, const YAML::Node& node,
                    const YAML::Node& keyNode) {
  if (node.IsNull()) return Ok{};
  if (!node.IsMap()) {
    const YAML::Mark mark = node.Mark().line >= 0 ? node.Mark() : keyNode.Mark();
    return loc.at(mark, "cgroups",
                  "expected a mapping from cgroup path to policy, found " + nodeKind(node));
  }
  std::map<CgroupPath, int> firstLine;
  return forEachKey(
      loc, node, "cgroups",
      [&](const std::string& name, const YAML::Node& key, const YAML::Node& value) -> Status {
        const std::string path = "cgroups." + name;
        auto cg = CgroupPath::parse(name);
        if (!cg) return loc.at(key.Mark(), path, cg.error().message);
        // A common slip: the mount point spelled out. No real cgroup is called "sys".
        const std::string& rel = cg->relative();
        if (rel == "sys/fs/cgroup" || rel.rfind("sys/fs/cgroup/", 0) == 0) {
          return loc.at(key.Mark(), path,
                        "cgroup paths are relative to the cgroup2 mount: write " +
                            ("/" + rel.substr(std::min(rel.size(), size_t{14}))));
        }
        auto [it, inserted] = firstLine.emplace(*cg, key.Mark().line + 1);
        if (!inserted) {
          return loc.at(
              key.Mark(), path,
              "same cgroup as " + cg->display() + " at line " + std::to_string(it->second));
        }
        return parseCgroupEntry(loc, out.cgroups[*cg], value, key, path);
      });
}

Result<ConfigFragment> parseRoot(const Locator& loc, const YAML::Node& root) {
  ConfigFragment out;
  if (!root.IsDefined() || root.IsNull()) return out;
  if (!root.IsMap()) {
    return loc.at(root.Mark(), "", "expected a mapping of settings, found " + nodeKind(root));
  }
  auto st = forEachKey(
      loc, root, "",
      [&](const std::string& name, const YAML::Node& key, const YAML::Node& value) -> Status {
        if (name == "detector")
          return setSourced(loc, out.detector, key, value, name, parseDetector);
        if (name == "poll_interval_ms") {
          return setSourced(loc, out.pollInterval, key, value, name, parsePollInterval);
        }
        if (name == "watch_fsync")
          return setSourced(loc, out.watchFsync, key, value, name, parseBoolean);
        if (name == "min_dirty_bytes") {
          return setSourced(loc, out.minDirtyBytes, key, value, name, parseMinDirtyBytes);
        }
        if (name == "dry_run") return setSourced(loc, out.dryRun, key, value, name, parseBoolean);
        if (name == "lift_on_shutdown") {
          return setSourced(loc, out.liftOnShutdown, key, value, name, parseBoolean);
        }
        if (name == "cgroups") return parseCgroups(loc, out, value, key);
        return loc.at(key.Mark(), name,
                      "unknown key (expected detector, poll_interval_ms, watch_fsync, "
                      "min_dirty_bytes, dry_run, lift_on_shutdown or cgroups)");
      });
  if (!st) return st.error();
  // Cgroups listed without any knob leave no entry.
  std::erase_if(out.cgroups, [](const auto& kv) { return kv.second.empty(); });
  return out;
}

}  // namespace

Result<ConfigFragment> parseConfigText(const ConfigText& file) {
  Locator loc(file.file);
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(file.text);
    if (docs.empty()) return ConfigFragment{};
    if (docs.size() > 1) {
      return loc.at(docs[1].Mark(), "", "more than one YAML document (remove the '---')");
    }
    return parseRoot(loc, docs[0]);
  } catch (const YAML::Exception& e) {
    return loc.at(e.mark, "", e.msg.empty() ? std::string("invalid YAML") : e.msg);
  } catch (const std::exception& e) {
    return loc.at(YAML::Mark::null_mark(), "", std::string("invalid YAML: ") + e.what());
  }
}

void mergeConfigFragment(Config& config, const ConfigFragment& f) {
  auto take = [](auto& value, ValueSource& source, const auto& opt) {
    if (!opt) return;
    value = opt->value;
    source = opt->source;
  };
  take(config.global.detector, config.globalSources.detector, f.detector);
  take(config.global.pollInterval, config.globalSources.pollInterval, f.pollInterval);
  take(config.global.watchFsync, config.globalSources.watchFsync, f.watchFsync);
  take(config.global.minDirtyBytes, config.globalSources.minDirtyBytes, f.minDirtyBytes);
  take(config.global.dryRun, config.globalSources.dryRun, f.dryRun);
  take(config.global.liftOnShutdown, config.globalSources.liftOnShutdown, f.liftOnShutdown);
  for (const auto& [path, settings] : f.cgroups) config.cgroups[path].overlay(settings);
}

Result<Config> parseConfig(const std::vector<ConfigText>& files) {
  Config config;
  for (const auto& file : files) {
    auto fragment = parseConfigText(file);
    if (!fragment) return fragment.error();
    mergeConfigFragment(config, *fragment);
    config.files.push_back(file.file);
  }
  return config;
}

Status checkConfig(const std::vector<ConfigText>& files) {
  auto config = parseConfig(files);
  if (!config) return config.error();
  return Ok{};
}

}  // namespace cxiosync
