// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Authorization as a pure function (no bus, no polkit calls): BusServer feeds it the caller's
// uid and, if needed, polkit's answer; it says allow, deny (with a message), or "ask polkit".
//
// Rules (docs/architecture.md §6, udisks2): reads never come here. uid 0 is always allowed (the
// server has checked its CAP_SYS_ADMIN before: BusServerOptions::rootCallerProblem). Anyone
// else needs polkit's yes for the action; polkit absent or failing means deny (root only).
// Interactive authentication is requested from polkit only when the caller allowed it
// (option "interactive", cxiosyncctl without --no-ask-password).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace cxiosync::dbus {

enum class PolkitAnswer {
  NotAsked,       // we have not asked yet
  Absent,         // no polkit on the bus (ServiceUnknown / NameHasNoOwner)
  Authorized,     // is_authorized = true
  Challenge,      // is_authorized = false, is_challenge = true (needs a password)
  NotAuthorized,  // is_authorized = false, is_challenge = false; or dismissed
  Failed,         // any other error (timeout, malformed reply)
};

struct AuthDecision {
  enum class Verdict { Allow, Deny, AskPolkit } verdict = Verdict::Deny;
  std::string message;  // for Deny: why, and what the caller can do
};

// `what`: the attempted change, for the message ("change the policy of /a.slice").
// `interactive`: whether polkit was (or will be) asked with AllowUserInteraction.
AuthDecision authorize(uint32_t uid, std::string_view action, std::string_view what,
                       PolkitAnswer answer, bool interactive);

// CheckAuthorization flags: 0x1 = AllowUserInteraction.
inline uint32_t polkitFlags(bool interactive) {
  return interactive ? 1u : 0u;
}

// Why a change was not made, before anything was touched: Denied is
// org.cxiosync1.Error.AccessDenied, Busy is org.cxiosync1.Error.Busy (too many calls waiting on
// authorization; nothing was asked, try again later).
struct Refusal {
  enum class Kind { Denied, Busy } kind = Kind::Denied;
  std::string message;
  const char* errorName() const;
  static Refusal denied(std::string message) { return {Kind::Denied, std::move(message)}; }
  static Refusal busy(std::string message) { return {Kind::Busy, std::move(message)}; }
};

// Bounded waiting (issue 16, audit M4): a caller who stops their polkit agent holds a pending
// CheckAuthorization for up to 120 s, and each one pins its message (and any fds in it) and
// one of the 128 replies dbus-daemon lets us wait for. Slots are counted per caller uid and in
// total; a call that finds no slot is refused with Busy at once. uid 0 never waits on polkit.
class PendingLimit {
 public:
  PendingLimit(size_t perUid, size_t total) : perUid_(perUid), total_(total) {}
  // A slot for `uid`; false when `uid` already holds perUid slots or all `total` are taken.
  bool tryAcquire(uint32_t uid);
  void release(uint32_t uid);
  size_t held(uint32_t uid) const;
  size_t held() const { return held_; }
  size_t perUid() const { return perUid_; }
  size_t total() const { return total_; }

 private:
  size_t perUid_, total_, held_ = 0;
  std::map<uint32_t, size_t> byUid_;
};

// The Busy message for a caller over a limit: which limit, and that nothing was changed.
std::string busyMessage(uint32_t uid, std::string_view what, const PendingLimit& limit);

// Maps polkit's reply (is_authorized, is_challenge) to an answer.
PolkitAnswer polkitAnswerFromReply(bool isAuthorized, bool isChallenge);
// Maps a D-Bus error name from the CheckAuthorization call to an answer.
PolkitAnswer polkitAnswerFromError(std::string_view errorName);

}  // namespace cxiosync::dbus
