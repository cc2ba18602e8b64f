// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/act/budget_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

#include "daemon/kernel/fs.h"
#include "policy/json.h"

namespace cxiosync {
namespace {

constexpr int64_t kMaxUsec = std::numeric_limits<int64_t>::max() / 1000;  // TimePoint is ns

int64_t usecOf(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::optional<TimePoint> timeFrom(const Json& v) {
  // is_number_integer() holds for unsigned values too, and get<int64_t>() wraps those above
  // INT64_MAX: 18446744073709551615 read as -1 us (found by fuzz_budgets).
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxUsec))
    return std::nullopt;
  const int64_t usec = v.get<int64_t>();
  if (usec > kMaxUsec || usec < -kMaxUsec) return std::nullopt;
  return TimePoint(std::chrono::microseconds(usec));
}

std::optional<TimePoint> timeMember(const Json& obj, const char* key, bool& bad) {
  const Json* v = jsonMember(obj, key);
  if (!v || v->is_null()) return std::nullopt;
  auto t = timeFrom(*v);
  if (!t) bad = true;
  return t;
}

Json accountToJson(const CgroupPath& cgroup, const SyncParty* party,
                   const PlannerState::HolderUsage& u, bool lastSeen) {
  Json j = Json::object();
  j["cgroup"] = jsonBytes(cgroup.display());
  if (party) j["syncer"] = jsonBytes(syncPartyText(*party));
  Json iv = Json::array();
  for (const auto& i : u.closed) iv.push_back(Json::array({usecOf(i.begin), usecOf(i.end)}));
  j["boosted_mono_usec"] = std::move(iv);
  if (u.openSince) j["open_since_mono_usec"] = usecOf(*u.openSince);
  if (lastSeen) j["last_seen_mono_usec"] = usecOf(u.lastSeenActive);
  return j;
}

// A record of "shares" (`withParty`) or of version 1's "accounts" (whose party is Any).
Result<std::pair<BudgetKey, PlannerState::HolderUsage>> accountFromJson(const Json& j,
                                                                        bool withParty) {
  if (!j.is_object()) return makeError("an account record must be an object");
  auto text = jsonByteString(j, "cgroup");
  if (!text) return makeError("\"cgroup\" must be a string");
  auto path = CgroupPath::parse(*text);
  if (!path) return makeError("bad \"cgroup\": " + path.error().message);
  SyncParty party = SyncParty::any();
  if (withParty) {
    auto p = jsonByteString(j, "syncer");
    auto parsed = p ? parseSyncParty(*p) : std::nullopt;
    if (!parsed) return makeError("\"syncer\" must be \"system\", \"uid N\" or a cgroup path");
    party = std::move(*parsed);
  }
  PlannerState::HolderUsage u;
  const Json* iv = jsonMember(j, "boosted_mono_usec");
  if (iv && !iv->is_array()) return makeError("\"boosted_mono_usec\" must be an array");
  if (iv) {
    for (const Json& pair : *iv) {
      std::optional<TimePoint> b, e;
      if (pair.is_array() && pair.size() == 2) {
        b = timeFrom(pair[0]);
        e = timeFrom(pair[1]);
      }
      if (!b || !e || *e < *b) return makeError("\"boosted_mono_usec\" holds a bad interval");
      u.closed.push_back({*b, *e});
    }
  }
  bool bad = false;
  u.openSince = timeMember(j, "open_since_mono_usec", bad);
  if (auto seen = timeMember(j, "last_seen_mono_usec", bad)) u.lastSeenActive = *seen;
  if (bad) return makeError("a bad time in \"open_since_mono_usec\" or \"last_seen_mono_usec\"");
  std::sort(u.closed.begin(), u.closed.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
  return std::pair{BudgetKey{std::move(path.value()), std::move(party)}, std::move(u)};
}

// Per account, the union of its shares' boosted time: version 1's "accounts".
std::map<CgroupPath, PlannerState::HolderUsage> accountUnion(const BudgetUsage& usage) {
  std::map<CgroupPath, PlannerState::HolderUsage> out;
  for (const auto& [key, u] : usage) {
    auto& a = out[key.account];
    a.closed.insert(a.closed.end(), u.closed.begin(), u.closed.end());
    if (u.openSince)
      a.openSince = a.openSince ? std::min(*a.openSince, *u.openSince) : *u.openSince;
    a.lastSeenActive = std::max(a.lastSeenActive, u.lastSeenActive);
  }
  for (auto& [cg, a] : out) {
    std::sort(a.closed.begin(), a.closed.end(),
              [](const auto& x, const auto& y) { return x.begin < y.begin; });
    std::vector<PlannerState::Interval> merged;
    for (const auto& iv : a.closed) {
      if (!merged.empty() && iv.begin <= merged.back().end) {
        merged.back().end = std::max(merged.back().end, iv.end);
      } else {
        merged.push_back(iv);
      }
    }
    a.closed = std::move(merged);
  }
  return out;
}

// The whole file without the last_seen times: what must be written again when it changes.
std::string stateKey(const PlannerState& state) {
  std::string key;
  for (const auto& [k, u] : state.usage)
    key += jsonDump(accountToJson(k.account, &k.party, u, false)) + "\n";
  if (state.historyLostAt) key += std::to_string(usecOf(*state.historyLostAt));
  return key;
}

}  // namespace

std::string syncPartyText(const SyncParty& party) {
  switch (party.kind) {
    case SyncParty::Kind::System:
      return "system";
    case SyncParty::Kind::User:
      return "uid " + std::to_string(party.uid);
    case SyncParty::Kind::Tenant:
      return party.tenant.display();
    case SyncParty::Kind::Any:
      return "any";
  }
  return "any";
}

std::optional<SyncParty> parseSyncParty(std::string_view text) {
  if (text == "system") return SyncParty::system();
  if (text == "any") return SyncParty::any();
  if (text.substr(0, 4) == "uid ") {
    const std::string_view n = text.substr(4);
    uint32_t uid = 0;
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), uid);
    if (ec != std::errc() || end != n.data() + n.size() || n.empty() || n[0] == '+')
      return std::nullopt;
    return SyncParty::user(uid);
  }
  if (text.empty() || text[0] != '/') return std::nullopt;
  auto path = CgroupPath::parse(text);
  if (!path) return std::nullopt;
  return SyncParty::ofTenant(std::move(path.value()));
}

std::string serializeBudgets(const BudgetUsage& usage, std::optional<TimePoint> historyLostAt) {
  std::string out = "{\"version\":" + std::to_string(kBudgetsVersion);
  if (historyLostAt) out += ",\"history_lost_mono_usec\":" + std::to_string(usecOf(*historyLostAt));
  auto records = [&](const char* name, auto&& each) {
    out += std::string(",\"") + name + "\":[";
    bool first = true;
    each([&](const Json& j) {
      out += first ? "\n" : ",\n";
      first = false;
      out += jsonDump(j);
    });
    out += "]";
  };
  records("shares", [&](auto&& put) {
    for (const auto& [k, u] : usage) put(accountToJson(k.account, &k.party, u, true));
  });
  records("accounts", [&](auto&& put) {
    for (const auto& [cg, u] : accountUnion(usage)) put(accountToJson(cg, nullptr, u, true));
  });
  out += "}\n";
  return out;
}

ParsedBudgets parseBudgets(std::string_view text) {
  ParsedBudgets out;
  auto doc = jsonParse(text);
  const Json* shares = doc ? jsonMember(doc.value(), "shares") : nullptr;
  const bool withParty = shares && shares->is_array();
  const Json* records = withParty ? shares : doc ? jsonMember(doc.value(), "accounts") : nullptr;
  if (!records || !records->is_array()) {
    out.unreadable = true;
    out.problems.push_back(doc ? std::string("no \"accounts\" array") : doc.error().message);
    return out;
  }
  const uint64_t version = jsonUint(doc.value(), "version").value_or(0);
  if (version > static_cast<uint64_t>(kBudgetsVersion)) {
    out.problems.push_back("version " + std::to_string(version) + " is newer than this daemon's " +
                           std::to_string(kBudgetsVersion) + "; read for what is understood");
  }
  if (const Json* lost = jsonMember(doc.value(), "history_lost_mono_usec")) {
    out.historyLostAt = timeFrom(*lost);
    if (!out.historyLostAt) {
      out.unreadable = true;
      out.problems.push_back("bad \"history_lost_mono_usec\"");
    }
  }
  for (const Json& rec : *records) {
    auto a = accountFromJson(rec, withParty);
    if (a) {
      out.usage.insert_or_assign(std::move(a.value().first), std::move(a.value().second));
      continue;
    }
    std::optional<CgroupPath> cg;
    if (auto t = jsonByteString(rec, "cgroup")) {
      if (auto p = CgroupPath::parse(*t)) cg = p.value();
    }
    out.problems.push_back((cg ? cg->display() + ": " : std::string("an account: ")) +
                           a.error().message);
    if (cg) {
      out.unreadableAccounts.push_back(*cg);
    } else {
      out.unreadable = true;  // whose budget it was is unknown: every account is suspect
    }
  }
  return out;
}

void applyLoadedBudgets(const ParsedBudgets& parsed, TimePoint now, PlannerState& state) {
  state.usage = parsed.usage;
  std::vector<CgroupPath> unreadable = parsed.unreadableAccounts;
  for (auto it = state.usage.begin(); it != state.usage.end();) {
    auto& u = it->second;
    // CLOCK_MONOTONIC within one boot: boosted time after the load cannot have been written
    // by an earlier daemon; the record is damaged (an open interval "since" the future ran
    // until "now" backwards, found by fuzz_budgets), so it counts as unreadable.
    bool future = u.openSince && *u.openSince > now;
    for (const auto& i : u.closed) future = future || i.end > now;
    if (future) {
      unreadable.push_back(it->first.account);
      it = state.usage.erase(it);
      continue;
    }
    // An open interval whose end was never written: assume it lasted until now.
    if (u.openSince && u.lastSeenActive < *u.openSince) u.lastSeenActive = now;
    ++it;
  }
  state.historyLostAt = parsed.historyLostAt;
  if (parsed.unreadable) state.historyLostAt = now;
  // An account whose record cannot be read: boosted for the longest window there is.
  const TimePoint since = now - std::chrono::seconds(86400);
  for (const CgroupPath& cg : unreadable) {
    auto& u = state.usage[BudgetKey{cg, SyncParty::any()}];  // every party's share
    u.closed.clear();
    u.openSince.reset();
    u.closed.push_back({since, now});
  }
}

BudgetStore::BudgetStore(std::string runDir) : path_(std::move(runDir) + "/" + kBudgetsFile) {}

Result<ParsedBudgets> BudgetStore::load() {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return ParsedBudgets{};
    fileExists_ = true;
    return makeError("open " + path_ + ": " + strerror(errno), errno);
  }
  fileExists_ = true;
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text.size() > (16u << 20)) {
      const int err = n < 0 ? errno : 0;
      ::close(fd);
      if (n < 0) return makeError("read " + path_ + ": " + strerror(err), err);
      if (n > 0) return makeError(path_ + ": larger than 16 MiB", EFBIG);
      break;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return parseBudgets(text);
}

Result<bool> BudgetStore::saveIfChanged(const PlannerState& state, TimePoint now,
                                        std::chrono::nanoseconds openRefresh) {
  std::string key = stateKey(state);
  bool anyOpen = false;
  for (const auto& [k, u] : state.usage) anyOpen |= u.openSince.has_value();
  const bool stale = anyOpen && now - lastWrite_ >= openRefresh;
  if (written_ && key == lastKey_ && !stale) return false;
  if (!written_ && !fileExists_ && state.usage.empty() && !state.historyLostAt) {
    written_ = true;  // nothing to keep, and nothing written yet: leave /run alone
    lastKey_ = std::move(key);
    return false;
  }
  if (auto st =
          writeFileAtomically(path_, serializeBudgets(state.usage, state.historyLostAt), 0600);
      !st) {
    return st.error();
  }
  written_ = true;
  lastKey_ = std::move(key);
  lastWrite_ = now;
  return true;
}

Status BudgetStore::saveFinal(const PlannerState& state, TimePoint now) {
  BudgetUsage usage = state.usage;
  for (auto& [k, u] : usage) {
    if (!u.openSince) continue;
    if (now > *u.openSince) u.closed.push_back({*u.openSince, now});
    u.openSince.reset();
  }
  return writeFileAtomically(path_, serializeBudgets(usage, state.historyLostAt), 0600);
}

}  // namespace cxiosync
