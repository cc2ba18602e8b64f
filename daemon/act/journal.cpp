#include "daemon/act/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>

#include "daemon/kernel/fs.h"
#include "policy/json.h"

namespace cxiosync {
namespace {

// ---- a tiny JSON reader/writer, exactly as much as the journal schema needs ----

struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
  bool b = false;
  bool negative = false;
  uint64_t num = 0;  // magnitude; integers only (the schema has no fractions)
  std::string str;
  std::vector<Json> arr;
  std::map<std::string, Json> obj;

  const Json* get(const std::string& key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &it->second;
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  Result<Json> parseDocument() {
    auto v = parseValue(0);
    if (!v) return v;
    skipWs();
    if (pos_ != s_.size()) return fail("trailing characters after the document");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 16;

  Error fail(const std::string& what) const {
    return makeError("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skipWs() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  bool consume(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) return false;
    pos_ += lit.size();
    return true;
  }

  Result<Json> parseValue(int depth) {
    if (depth > kMaxDepth) return fail("nested too deeply");
    skipWs();
    if (pos_ >= s_.size()) return fail("unexpected end");
    Json v;
    char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v.type = Json::Type::Object;
      skipWs();
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        skipWs();
        auto key = parseString();
        if (!key) return key.error();
        skipWs();
        if (!consume(":")) return fail("expected ':'");
        auto val = parseValue(depth + 1);
        if (!val) return val;
        if (!v.obj.emplace(key.value(), std::move(val.value())).second)
          return fail("duplicate key \"" + key.value() + "\"");
        skipWs();
        if (consume(",")) continue;
        if (consume("}")) return v;
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++pos_;
      v.type = Json::Type::Array;
      skipWs();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        auto val = parseValue(depth + 1);
        if (!val) return val;
        v.arr.push_back(std::move(val.value()));
        skipWs();
        if (consume(",")) continue;
        if (consume("]")) return v;
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      auto str = parseString();
      if (!str) return str.error();
      v.type = Json::Type::String;
      v.str = std::move(str.value());
      return v;
    }
    if (consume("true")) {
      v.type = Json::Type::Bool;
      v.b = true;
      return v;
    }
    if (consume("false")) {
      v.type = Json::Type::Bool;
      return v;
    }
    if (consume("null")) return v;
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.type = Json::Type::Number;
      if (c == '-') {
        v.negative = true;
        ++pos_;
      }
      size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        uint64_t d = static_cast<uint64_t>(s_[pos_] - '0');
        if (v.num > (UINT64_MAX - d) / 10) return fail("number out of range");
        v.num = v.num * 10 + d;
        ++pos_;
      }
      if (pos_ == start) return fail("bad number");
      if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
        return fail("only integers are expected");
      return v;
    }
    return fail(std::string("unexpected character '") + c + "'");
  }

  Result<std::string> parseString() {
    if (!consume("\"")) return fail("expected a string");
    std::string out;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return fail("short \\u escape");
          unsigned cp = 0;
          for (int i = 0; i < 4; ++i) {
            char h = s_[pos_++];
            cp <<= 4;
            if (h >= '0' && h <= '9')
              cp |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
              cp |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
              cp |= static_cast<unsigned>(h - 'A' + 10);
            else
              return fail("bad \\u escape");
          }
          // We only ever write \u00XX for control bytes; anything else is kept as UTF-8.
          if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          }
          break;
        }
        default:
          return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }

  std::string_view s_;
  size_t pos_ = 0;
};

void appendLimitValue(std::string& out, uint64_t v) {
  if (v == kUnlimited)
    out += "\"max\"";
  else
    out += std::to_string(v);
}

void appendLimits(std::string& out, const IoLimits& l) {
  out.push_back('{');
  bool first = true;
  auto key = [&](const char* name, const std::optional<uint64_t>& v) {
    if (!v) return;
    if (!first) out.push_back(',');
    first = false;
    appendJsonString(out, name, JsonBytes::Raw);
    out.push_back(':');
    appendLimitValue(out, *v);
  };
  key("rbps", l.rbps);
  key("wbps", l.wbps);
  key("riops", l.riops);
  key("wiops", l.wiops);
  out.push_back('}');
}

Result<IoLimits> limitsFromJson(const Json* j, const char* what) {
  if (!j || j->type != Json::Type::Object)
    return makeError(std::string("\"") + what + "\" must be an object");
  IoLimits l;
  for (const auto& [k, v] : j->obj) {
    std::optional<uint64_t>* slot = nullptr;
    if (k == "rbps")
      slot = &l.rbps;
    else if (k == "wbps")
      slot = &l.wbps;
    else if (k == "riops")
      slot = &l.riops;
    else if (k == "wiops")
      slot = &l.wiops;
    else
      return makeError(std::string("unknown key \"") + k + "\" in \"" + what + "\"");
    if (v.type == Json::Type::String && v.str == "max")
      *slot = kUnlimited;
    else if (v.type == Json::Type::Number && !v.negative)
      *slot = v.num;
    else
      return makeError(std::string("bad value for \"") + k + "\" in \"" + what + "\"");
  }
  return l;
}

Result<int64_t> intFromJson(const Json* j, const char* what) {
  if (!j || j->type != Json::Type::Number || j->num > static_cast<uint64_t>(INT64_MAX))
    return makeError(std::string("\"") + what + "\" must be an integer");
  return j->negative ? -static_cast<int64_t>(j->num) : static_cast<int64_t>(j->num);
}

Result<JournalRecord> recordFromJson(const Json& j) {
  if (j.type != Json::Type::Object) return makeError("a boost record must be an object");
  static const char* kKnown[] = {"cgroup",
                                 "device",
                                 "original",
                                 "boosted",
                                 "started_mono_usec",
                                 "started_unix_usec",
                                 "syncer_tids",
                                 "shutdown_lift",
                                 "cgroup_ino"};
  for (const auto& [k, v] : j.obj) {
    bool known = false;
    for (const char* n : kKnown) known = known || k == n;
    if (!known) return makeError("unknown key \"" + k + "\" in a boost record");
  }
  JournalRecord r;
  const Json* cg = j.get("cgroup");
  if (!cg || cg->type != Json::Type::String) return makeError("\"cgroup\" must be a string");
  auto path = CgroupPath::parse(cg->str);
  if (!path) return makeError("bad \"cgroup\": " + path.error().message);
  r.boost.cgroup = path.value();
  const Json* dev = j.get("device");
  if (!dev || dev->type != Json::Type::String) return makeError("\"device\" must be a string");
  auto dn = parseDevNum(dev->str);
  if (!dn) return makeError("bad \"device\": " + dn.error().message);
  r.boost.device = dn.value();
  auto orig = limitsFromJson(j.get("original"), "original");
  if (!orig) return orig.error();
  auto boosted = limitsFromJson(j.get("boosted"), "boosted");
  if (!boosted) return boosted.error();
  r.boost.original = IoMaxEntry{r.boost.device, orig.value()};
  r.boost.boosted = IoMaxEntry{r.boost.device, boosted.value()};
  auto mono = intFromJson(j.get("started_mono_usec"), "started_mono_usec");
  if (!mono) return mono.error();
  r.boost.started = TimePoint(std::chrono::microseconds(mono.value()));
  if (const Json* unix = j.get("started_unix_usec")) {
    auto u = intFromJson(unix, "started_unix_usec");
    if (!u) return u.error();
    r.startedUnixUsec = u.value();
  }
  if (const Json* tids = j.get("syncer_tids")) {
    if (tids->type != Json::Type::Array) return makeError("\"syncer_tids\" must be an array");
    for (const Json& t : tids->arr) {
      auto v = intFromJson(&t, "syncer_tids[]");
      if (!v) return v.error();
      r.boost.syncerTids.push_back(v.value());
    }
  }
  if (const Json* sl = j.get("shutdown_lift")) {
    if (sl->type != Json::Type::Bool) return makeError("\"shutdown_lift\" must be a boolean");
    r.boost.shutdownLift = sl->b;
  }
  if (const Json* ino = j.get("cgroup_ino")) {
    if (ino->type != Json::Type::Number || ino->negative)
      return makeError("\"cgroup_ino\" must be a non-negative integer");
    r.cgroupInode = ino->num;
  }
  return r;
}

}  // namespace

std::string serializeJournal(const std::vector<JournalRecord>& records) {
  std::string out = "{\"version\":" + std::to_string(kJournalVersion) + ",\"boosts\":[";
  bool first = true;
  for (const auto& r : records) {
    const ActiveBoost& b = r.boost;
    out += first ? "\n" : ",\n";
    first = false;
    out += "{\"cgroup\":";
    appendJsonString(out, b.cgroup.display(), JsonBytes::Raw);
    out += ",\"device\":";
    appendJsonString(out, b.device.str(), JsonBytes::Raw);
    out += ",\"original\":";
    appendLimits(out, b.original.limits);
    out += ",\"boosted\":";
    appendLimits(out, b.boosted.limits);
    out += ",\"started_mono_usec\":";
    out += std::to_string(
        std::chrono::duration_cast<std::chrono::microseconds>(b.started.time_since_epoch())
            .count());
    out += ",\"started_unix_usec\":" + std::to_string(r.startedUnixUsec);
    out += ",\"syncer_tids\":[";
    for (size_t i = 0; i < b.syncerTids.size(); ++i) {
      if (i) out.push_back(',');
      out += std::to_string(b.syncerTids[i]);
    }
    out += "],\"shutdown_lift\":";
    out += b.shutdownLift ? "true" : "false";
    out += ",\"cgroup_ino\":" + std::to_string(r.cgroupInode);
    out += "}";
  }
  out += "]}\n";
  return out;
}

Result<std::vector<JournalRecord>> parseJournal(std::string_view text) {
  auto doc = JsonParser(text).parseDocument();
  if (!doc) return doc.error();
  const Json& j = doc.value();
  if (j.type != Json::Type::Object) return makeError("the journal must be a JSON object");
  const Json* version = j.get("version");
  if (!version || version->type != Json::Type::Number || version->negative)
    return makeError("the journal has no \"version\"");
  if (version->num != static_cast<uint64_t>(kJournalVersion))
    return makeError("unknown journal version " + std::to_string(version->num) +
                     " (this daemon understands " + std::to_string(kJournalVersion) + ")");
  for (const auto& [k, v] : j.obj)
    if (k != "version" && k != "boosts") return makeError("unknown top-level key \"" + k + "\"");
  const Json* boosts = j.get("boosts");
  if (!boosts || boosts->type != Json::Type::Array) return makeError("\"boosts\" must be an array");
  std::vector<JournalRecord> out;
  for (size_t i = 0; i < boosts->arr.size(); ++i) {
    auto r = recordFromJson(boosts->arr[i]);
    if (!r) return makeError("boosts[" + std::to_string(i) + "]: " + r.error().message);
    out.push_back(std::move(r.value()));
  }
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
  if (!text.value()) return loaded;
  auto parsed = parseJournal(*text.value());
  if (parsed) {
    loaded.records = std::move(parsed.value());
    return loaded;
  }
  loaded.problem = parsed.error().message;
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
    return makeError("cannot move the unreadable journal " + path_ + " aside (" + loaded.problem +
                         "): " + strerror(errno),
                     errno);
  loaded.movedAsideTo = aside;
  return loaded;
}

Status Journal::save(const std::vector<JournalRecord>& records) {
  return writeFileAtomically(path_, serializeJournal(records), 0600);
}

}  // namespace cxiosync
