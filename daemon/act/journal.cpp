// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/act/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>

#include "daemon/kernel/fs.h"
#include "policy/bytes_text.h"
#include "policy/json.h"

namespace cxiosync {
namespace {

constexpr const char* kLimitKeys[] = {"rbps", "wbps", "riops", "wiops"};

std::optional<uint64_t> IoLimits::*limitSlot(std::string_view key) {
  if (key == "rbps") return &IoLimits::rbps;
  if (key == "wbps") return &IoLimits::wbps;
  if (key == "riops") return &IoLimits::riops;
  if (key == "wiops") return &IoLimits::wiops;
  return nullptr;
}

Json limitsToJson(const IoLimits& l) {
  Json out = Json::object();
  for (const char* k : kLimitKeys) {
    const std::optional<uint64_t>& v = l.*limitSlot(k);
    if (!v) continue;
    out[k] = *v == kUnlimited ? Json("max") : Json(*v);
  }
  return out;
}

// An unknown key in a limits object makes the record unreadable, not ignored: restoring only
// the keys we know would leave the other one lifted for good.
Result<IoLimits> limitsFromJson(const Json& rec, const char* what) {
  const Json* j = jsonMember(rec, what);
  if (!j || !j->is_object()) return makeError(std::string("\"") + what + "\" must be an object");
  IoLimits l;
  for (const auto& [k, v] : j->items()) {
    auto slot = limitSlot(k);
    if (!slot) return makeError("unknown limit \"" + k + "\" in \"" + what + "\"");
    if (v.is_string() && v.get<std::string>() == "max")
      l.*slot = kUnlimited;
    else if (v.is_number_unsigned())
      l.*slot = v.get<uint64_t>();
    else
      return makeError("bad value for \"" + k + "\" in \"" + what + "\"");
  }
  return l;
}

Json recordToJson(const JournalRecord& r) {
  const ActiveBoost& b = r.boost;
  Json j = Json::object();
  j["cgroup"] = jsonBytes(b.cgroup.display());
  j["device"] = b.device.str();
  j["original"] = limitsToJson(b.original.limits);
  j["boosted"] = limitsToJson(b.boosted.limits);
  j["started_mono_usec"] =
      std::chrono::duration_cast<std::chrono::microseconds>(b.started.time_since_epoch()).count();
  j["started_unix_usec"] = r.startedUnixUsec;
  j["syncer_tids"] = b.syncerTids;
  j["shutdown_lift"] = b.shutdownLift;
  j["cgroup_ino"] = r.cgroupInode;
  return j;
}

Result<CgroupPath> cgroupFromJson(const Json& j) {
  auto text = jsonByteString(j, "cgroup");
  if (!text) return makeError("\"cgroup\" must be a string");
  auto path = CgroupPath::parse(*text);
  if (!path) return makeError("bad \"cgroup\": " + path.error().message);
  return path;
}

Result<DevNum> deviceFromJson(const Json& j) {
  auto text = jsonText(j, "device");
  if (!text) return makeError("\"device\" must be a string");
  auto dn = parseDevNum(*text);
  if (!dn) return makeError("bad \"device\": " + dn.error().message);
  return dn;
}

// A key that is present must have its type; a missing optional key keeps its default.
template <class T>
Status readOptional(const Json& j, const char* key, const std::optional<T>& v, T& out) {
  if (!jsonMember(j, key)) return Ok{};
  if (!v) return makeError(std::string("bad \"") + key + "\"");
  out = *v;
  return Ok{};
}

Result<JournalRecord> recordFromJson(const Json& j) {
  if (!j.is_object()) return makeError("a boost record must be an object");
  if (jsonMember(j, "unreadable")) return makeError("a damaged record, kept from an earlier load");
  JournalRecord r;
  auto path = cgroupFromJson(j);
  if (!path) return path.error();
  r.boost.cgroup = path.value();
  auto dn = deviceFromJson(j);
  if (!dn) return dn.error();
  r.boost.device = dn.value();
  auto orig = limitsFromJson(j, "original");
  if (!orig) return orig.error();
  auto boosted = limitsFromJson(j, "boosted");
  if (!boosted) return boosted.error();
  r.boost.original = IoMaxEntry{r.boost.device, orig.value()};
  r.boost.boosted = IoMaxEntry{r.boost.device, boosted.value()};
  auto mono = jsonInt(j, "started_mono_usec");
  if (!mono) return makeError("\"started_mono_usec\" must be an integer");
  // TimePoint counts nanoseconds: a larger value would overflow (UB) in the conversion and be
  // rewritten as another time (found by fuzz_journal).
  constexpr int64_t kMaxUsec = std::numeric_limits<int64_t>::max() / 1000;
  if (*mono > kMaxUsec || *mono < -kMaxUsec) return makeError("\"started_mono_usec\" out of range");
  r.boost.started = TimePoint(std::chrono::microseconds(*mono));
  if (auto st =
          readOptional(j, "started_unix_usec", jsonInt(j, "started_unix_usec"), r.startedUnixUsec);
      !st)
    return st.error();
  if (auto st =
          readOptional(j, "shutdown_lift", jsonBool(j, "shutdown_lift"), r.boost.shutdownLift);
      !st)
    return st.error();
  if (auto st = readOptional(j, "cgroup_ino", jsonUint(j, "cgroup_ino"), r.cgroupInode); !st)
    return st.error();
  if (const Json* tids = jsonMember(j, "syncer_tids")) {
    if (!tids->is_array()) return makeError("\"syncer_tids\" must be an array");
    for (const Json& t : *tids) {
      // An unsigned value above INT64_MAX would wrap under get<int64_t>().
      if (!t.is_number_integer() ||
          (t.is_number_unsigned() &&
           t.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
        return makeError("\"syncer_tids\" must hold integers");
      r.boost.syncerTids.push_back(t.get<int64_t>());
    }
  }
  return r;
}

void readRecord(const Json& j, ParsedJournal& out) {
  auto r = recordFromJson(j);
  if (r) {
    out.records.push_back(std::move(r.value()));
    return;
  }
  UnreadableRecord u;
  u.reason = r.error().message;
  if (auto cg = cgroupFromJson(j)) u.cgroup = cg.value();
  if (auto dn = deviceFromJson(j); dn && u.cgroup) u.device = dn.value();
  u.text = jsonDump(j);
  out.unreadable.push_back(std::move(u));
}

// Files written before policy/json.h wrote a byte that is not UTF-8 as it is (nlohmann reads
// only UTF-8). Such a byte can only stand inside a string: write it as the text \xNN there, which
// the cgroup reader turns back into the byte.
std::string legacyBytesAsEscapes(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (size_t n = utf8SequenceLength(text, i); n != 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    auto c = static_cast<unsigned char>(text[i++]);
    out += "\\\\x";
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

// The cgroup of a damaged line, when the line still starts as the writer starts a record.
std::optional<CgroupPath> salvageCgroup(std::string_view line) {
  constexpr std::string_view kStart = "{\"cgroup\":\"";
  if (line.substr(0, kStart.size()) != kStart) return std::nullopt;
  for (size_t i = kStart.size(); i < line.size(); ++i) {
    if (line[i] == '\\') {
      ++i;
    } else if (line[i] == '"') {
      auto s = jsonParse(line.substr(kStart.size() - 1, i - kStart.size() + 2));
      if (!s || !s->is_string()) return std::nullopt;
      auto path = CgroupPath::parse(bytesFromText(s->get<std::string>()));
      if (!path) return std::nullopt;
      return path.value();
    }
  }
  return std::nullopt;
}

// A damaged document, one line at a time: the writer puts every record on its own line.
void readLines(std::string_view text, ParsedJournal& out) {
  size_t pos = 0;
  for (bool first = true; pos < text.size(); first = false) {
    size_t nl = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (first) {
      size_t open = line.find('[');
      if (open == std::string_view::npos) continue;
      line.remove_prefix(open + 1);
    }
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.ends_with("]}")) line.remove_suffix(2);
    if (line.ends_with(",")) line.remove_suffix(1);
    if (line.empty()) continue;
    if (auto j = jsonParse(line)) {
      readRecord(j.value(), out);
      continue;
    }
    UnreadableRecord u;
    u.reason = "a damaged line";
    u.cgroup = salvageCgroup(line);
    Json wrapper = {{"unreadable", textFromBytes(line)}};
    if (u.cgroup) wrapper["cgroup"] = jsonBytes(u.cgroup->display());
    u.text = jsonDump(wrapper);
    out.unreadable.push_back(std::move(u));
  }
}

}  // namespace

std::string serializeJournal(const std::vector<JournalRecord>& records,
                             const std::vector<UnreadableRecord>& unreadable) {
  std::string out = "{\"version\":" + std::to_string(kJournalVersion) + ",\"boosts\":[";
  bool first = true;
  auto add = [&](const std::string& line) {
    out += first ? "\n" : ",\n";
    first = false;
    out += line;
  };
  for (const auto& r : records) add(jsonDump(recordToJson(r)));
  for (const auto& u : unreadable) add(u.text);
  out += "]}\n";
  return out;
}

ParsedJournal parseJournal(std::string_view text) {
  ParsedJournal out;
  std::string utf8 = legacyBytesAsEscapes(text);
  auto doc = jsonParse(utf8);
  const Json* boosts = doc ? jsonMember(doc.value(), "boosts") : nullptr;
  if (!boosts || !boosts->is_array()) {
    out.damaged = true;
    out.problem = doc ? std::string("no \"boosts\" array") : doc.error().message;
    readLines(utf8, out);
    return out;
  }
  if (auto v = jsonUint(doc.value(), "version")) out.version = *v;
  if (out.version == 0)
    out.problem = "no \"version\"; read as version " + std::to_string(kJournalVersion);
  else if (out.version > static_cast<uint64_t>(kJournalVersion))
    out.problem = "version " + std::to_string(out.version) + " is newer than this daemon's " +
                  std::to_string(kJournalVersion) + "; read for what is understood";
  for (const Json& rec : *boosts) readRecord(rec, out);
  return out;
}

Journal::Journal(std::string runDir) : runDir_(std::move(runDir)) {
  path_ = runDir_ + "/" + kJournalFile;
}

namespace {

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

Result<std::optional<std::string>> readWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>{};
    return makeError("open " + path + ": " + strerror(errno), errno);
  }
  FdCloser closer{fd};
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return makeError("read " + path + ": " + strerror(errno), errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (16u << 20)) return makeError(path + ": larger than 16 MiB", EFBIG);
  }
  return std::optional<std::string>(std::move(out));
}

}  // namespace

Result<Journal::Loaded> Journal::load() {
  auto text = readWholeFile(path_);
  if (!text) return text.error();
  Loaded loaded;
  unreadable_.clear();
  if (!text.value()) return loaded;
  ParsedJournal parsed = parseJournal(*text.value());
  loaded.records = std::move(parsed.records);
  loaded.unreadable = parsed.unreadable;
  loaded.problem = parsed.problem;
  unreadable_ = std::move(parsed.unreadable);
  if (!parsed.damaged) return loaded;
  auto now = std::chrono::system_clock::now();
  const std::string base =
      path_ + ".corrupt-" +
      std::to_string(
          std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count());
  // Never overwrite an earlier moved-aside file: it may hold the only copy of a limit.
  std::string aside = base;
  for (int i = 1; ::access(aside.c_str(), F_OK) == 0 && i < 1000; ++i)
    aside = base + "." + std::to_string(i);
  if (::rename(path_.c_str(), aside.c_str()) != 0)
    return makeError("cannot move the damaged journal " + path_ + " aside (" + loaded.problem +
                         "): " + strerror(errno),
                     errno);
  loaded.movedAsideTo = aside;
  return loaded;
}

Status Journal::save(const std::vector<JournalRecord>& records) {
  return writeFileAtomically(path_, serializeJournal(records, unreadable_), 0600);
}

}  // namespace cxiosync
