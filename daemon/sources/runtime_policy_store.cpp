// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sources/runtime_policy_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "daemon/kernel/fs.h"
#include "policy/config/values.h"
#include "policy/json.h"

namespace cxiosync {

std::string serializeRuntimePolicy(const RuntimeEntries& entries) {
  Json cgroups = Json::object();
  for (const auto& [cg, knobs] : entries) {
    if (knobs.empty()) continue;
    Json& k = cgroups[textFromBytes(cg.display())];
    k = Json::object();
    for (const auto& [name, value] : knobs) k[name] = value;
  }
  return jsonDump(Json{{"version", kRuntimePolicyVersion}, {"cgroups", std::move(cgroups)}}, 2) +
         "\n";
}

namespace {

// A knob value as text: written as a string, but a hand-edited number or boolean is read too.
std::optional<std::string> knobText(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_boolean()) return jsonDump(v);
  return std::nullopt;
}

void readCgroup(const std::string& name, const Json& knobsJson, RuntimeEntries& out,
                std::vector<std::string>* skipped) {
  auto skip = [&](const std::string& why) {
    if (skipped) skipped->push_back("cgroup \"" + name + "\": " + why);
  };
  auto path = CgroupPath::parse(bytesFromText(name));
  if (!path) return skip(path.error().message);
  if (!knobsJson.is_object()) return skip("not an object of knobs");
  auto& knobs = out[*path];
  for (const auto& [knob, v] : knobsJson.items()) {
    auto value = knobText(v);
    if (!value) {
      skip(knob + ": not a string");
      continue;
    }
    PolicySettings probe;
    if (auto st = setPolicyKnob(probe, knob, *value, ValueSource::runtime()); !st) {
      skip(knob + ": " + st.error().message);
      continue;
    }
    knobs[knob] = *value;
  }
  if (knobs.empty()) out.erase(*path);
}

}  // namespace

Result<RuntimeEntries> parseRuntimePolicy(std::string_view text,
                                          std::vector<std::string>* skipped) {
  auto root = jsonParse(text);
  if (!root) return makeError("malformed " + root.error().message, EINVAL);
  if (!root->is_object()) return makeError("not a JSON object", EINVAL);
  // A newer version is read for what is understood; no version at all is not our file.
  auto version = jsonUint(*root, "version");
  if (!version || *version < static_cast<uint64_t>(kRuntimePolicyVersion))
    return makeError("missing or unsupported \"version\" (expected " +
                         std::to_string(kRuntimePolicyVersion) + " or later)",
                     EINVAL);
  RuntimeEntries out;
  const Json* cgroups = jsonMember(*root, "cgroups");
  if (!cgroups) return out;
  if (!cgroups->is_object()) return makeError("\"cgroups\" is not an object", EINVAL);
  for (const auto& [name, knobs] : cgroups->items()) readCgroup(name, knobs, out, skipped);
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
  std::vector<std::string> skipped;
  auto parsed = parseRuntimePolicy(**text, &skipped);
  if (parsed) {
    into = std::move(*parsed);
    if (skipped.empty()) return;
    // The next change rewrites the file without what was skipped (perhaps a newer version's
    // settings): keep it as it was for a person.
    std::string copy = path + ".corrupt-" + std::to_string(::time(nullptr));
    bool kept = writeFileAtomically(copy, **text, 0600).ok();
    for (const auto& why : skipped)
      problems.push_back(path + ": " + why + "; skipped" +
                         (kept ? " (the file as it was: " + copy + ")" : std::string()));
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

namespace {

Status fsyncPath(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return makeError("open " + path + ": " + strerror(errno), errno);
  int rc = ::fsync(fd);
  int e = errno;
  ::close(fd);
  if (rc != 0) return makeError("fsync " + path + ": " + strerror(e), e);
  return Ok{};
}

// temp + fsync + rename + fsync(dir): a change the caller was told succeeded survives a power
// cut. Only on an operator's change, never on the throttled I/O path.
Status writeFileDurably(const std::string& dir, const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return makeError("open " + tmp + ": " + strerror(errno), errno);
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return makeError("write " + tmp + ": " + strerror(e), e);
    }
    done += static_cast<size_t>(n);
  }
  int rc = ::fsync(fd);
  int e = errno;
  ::close(fd);
  if (rc != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (rc == 0) e = errno;
    ::unlink(tmp.c_str());
    return makeError((rc != 0 ? "fsync " : "rename ") + tmp + ": " + strerror(e), e);
  }
  return fsyncPath(dir, O_DIRECTORY);
}

}  // namespace

Status RuntimePolicyStore::save(const std::string& dir, const std::string& path,
                                const RuntimeEntries& e) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return makeError("cannot create " + dir + ": " + strerror(errno), errno);
  return writeFileDurably(dir, path, serializeRuntimePolicy(e));
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
