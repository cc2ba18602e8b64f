#include "daemon/sources/runtime_policy_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <yaml-cpp/yaml.h>

#include "daemon/kernel/fs.h"
#include "policy/config/values.h"
#include "policy/json_writer.h"

namespace cxiosync {

std::string serializeRuntimePolicy(const RuntimeEntries& entries) {
  JsonWriter w(true);
  w.beginObject();
  w.key("version").value(kRuntimePolicyVersion);
  w.key("cgroups").beginObject();
  for (const auto& [cg, knobs] : entries) {
    if (knobs.empty()) continue;
    w.key(cg.display()).beginObject();
    for (const auto& [k, v] : knobs) w.key(k).value(v);
    w.endObject();
  }
  w.endObject().endObject();
  return w.str() + "\n";
}

Result<RuntimeEntries> parseRuntimePolicy(std::string_view text) {
  RuntimeEntries out;
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) return makeError("not a JSON object", EINVAL);
    if (!root["version"] || root["version"].as<int>() != kRuntimePolicyVersion)
      return makeError("missing or unsupported \"version\" (expected " +
                           std::to_string(kRuntimePolicyVersion) + ")",
                       EINVAL);
    YAML::Node cgroups = root["cgroups"];
    if (!cgroups) return out;
    if (!cgroups.IsMap()) return makeError("\"cgroups\" is not an object", EINVAL);
    for (const auto& it : cgroups) {
      const std::string name = it.first.as<std::string>();
      auto path = CgroupPath::parse(name);
      if (!path) return makeError("cgroup \"" + name + "\": " + path.error().message, EINVAL);
      if (!it.second.IsMap())
        return makeError("cgroup \"" + name + "\": not an object of knobs", EINVAL);
      auto& knobs = out[*path];
      for (const auto& kv : it.second) {
        const std::string knob = kv.first.as<std::string>();
        const std::string value = kv.second.as<std::string>();
        PolicySettings probe;
        if (auto st = setPolicyKnob(probe, knob, value, ValueSource::runtime()); !st)
          return makeError("cgroup \"" + name + "\": " + knob + ": " + st.error().message, EINVAL);
        knobs[knob] = value;
      }
    }
  } catch (const YAML::Exception& e) {
    return makeError(std::string("malformed JSON: ") + e.what(), EINVAL);
  }
  return out;
}

std::map<CgroupPath, PolicySettings> runtimeLayerOf(const RuntimeEntries& entries) {
  std::map<CgroupPath, PolicySettings> layer;
  for (const auto& [cg, knobs] : entries) {
    PolicySettings s;
    for (const auto& [k, v] : knobs) (void)setPolicyKnob(s, k, v, ValueSource::runtime());
    if (!s.empty()) layer[cg] = s;
  }
  return layer;
}

RuntimePolicyStore::RuntimePolicyStore(std::string stateDir, std::string runDir)
    : stateDir_(std::move(stateDir)),
      runDir_(std::move(runDir)),
      persistentPath_(stateDir_ + "/" + kRuntimePolicyFile),
      volatilePath_(runDir_ + "/" + kRuntimePolicyFile) {}

namespace {

// nullopt: the file does not exist.
Result<std::optional<std::string>> readSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>{};
    return makeError(path + ": " + strerror(errno), errno);
  }
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return makeError(path + ": " + strerror(e), e);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (4u << 20)) {
      ::close(fd);
      return makeError(path + ": larger than 4 MiB", EFBIG);
    }
  }
  ::close(fd);
  return std::optional<std::string>(std::move(out));
}

void loadOne(const std::string& path, RuntimeEntries& into, std::vector<std::string>& problems) {
  into.clear();
  auto text = readSmallFile(path);
  if (!text) {
    problems.push_back("cannot read " + text.error().message + "; runtime settings in it ignored");
    return;
  }
  if (!text->has_value()) return;
  auto parsed = parseRuntimePolicy(**text);
  if (parsed) {
    into = std::move(*parsed);
    return;
  }
  std::string aside = path + ".corrupt-" + std::to_string(::time(nullptr));
  if (::rename(path.c_str(), aside.c_str()) == 0)
    problems.push_back(path + ": " + parsed.error().message + "; moved aside to " + aside);
  else
    problems.push_back(path + ": " + parsed.error().message +
                       "; ignored (cannot move it aside: " + strerror(errno) + ")");
}

}  // namespace

RuntimePolicyStore::LoadReport RuntimePolicyStore::load() {
  LoadReport r;
  loadOne(persistentPath_, persistent_, r.problems);
  loadOne(volatilePath_, volatile_, r.problems);
  r.persistent = persistent_.size();
  r.volatileCount = volatile_.size();
  return r;
}

Status RuntimePolicyStore::save(const std::string& dir, const std::string& path,
                                const RuntimeEntries& e) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return makeError("cannot create " + dir + ": " + strerror(errno), errno);
  return writeFileAtomically(path, serializeRuntimePolicy(e));
}

Status RuntimePolicyStore::set(const CgroupPath& cgroup, std::string_view knob, std::string value,
                               bool runtime) {
  PolicySettings probe;
  if (auto st = setPolicyKnob(probe, knob, value, ValueSource::runtime()); !st)
    return makeError(st.error().message, EINVAL);
  const std::string k(knob);
  if (runtime) {
    RuntimeEntries next = volatile_;
    next[cgroup][k] = value;
    if (auto st = save(runDir_, volatilePath_, next); !st) return st;
    volatile_ = std::move(next);
    return Ok{};
  }
  RuntimeEntries next = persistent_;
  next[cgroup][k] = value;
  if (auto st = save(stateDir_, persistentPath_, next); !st) return st;
  persistent_ = std::move(next);
  // The latest change wins: a --runtime value of the same knob would shadow it.
  auto it = volatile_.find(cgroup);
  if (it != volatile_.end() && it->second.erase(k)) {
    RuntimeEntries vnext = volatile_;
    if (it->second.empty()) vnext.erase(cgroup);
    if (save(runDir_, volatilePath_, vnext)) volatile_ = std::move(vnext);
  }
  return Ok{};
}

Result<bool> RuntimePolicyStore::reset(const CgroupPath& cgroup) {
  bool any = false;
  if (persistent_.count(cgroup)) {
    RuntimeEntries next = persistent_;
    next.erase(cgroup);
    if (auto st = save(stateDir_, persistentPath_, next); !st) return st.error();
    persistent_ = std::move(next);
    any = true;
  }
  if (volatile_.count(cgroup)) {
    RuntimeEntries next = volatile_;
    next.erase(cgroup);
    if (auto st = save(runDir_, volatilePath_, next); !st) return st.error();
    volatile_ = std::move(next);
    any = true;
  }
  return any;
}

bool RuntimePolicyStore::has(const CgroupPath& cgroup) const {
  return persistent_.count(cgroup) || volatile_.count(cgroup);
}

std::map<CgroupPath, PolicySettings> RuntimePolicyStore::layer() const {
  RuntimeEntries merged = persistent_;
  for (const auto& [cg, knobs] : volatile_)
    for (const auto& [k, v] : knobs) merged[cg][k] = v;
  return runtimeLayerOf(merged);
}

}  // namespace cxiosync
