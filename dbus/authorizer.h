// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Authorization as a pure function (no bus, no polkit calls): BusServer feeds it the caller's
// uid and, if needed, polkit's answer; it says allow, deny (with a message), or "ask polkit".
//
// Rules (docs/architecture.md §6, udisks2): reads never come here. uid 0 is always allowed. Anyone
// else needs polkit's yes for the action; polkit absent or failing means deny (root only).
// Interactive authentication is requested from polkit only when the caller allowed it
// (option "interactive", cxiosyncctl without --no-ask-password).
#include <cstdint>
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

// Maps polkit's reply (is_authorized, is_challenge) to an answer.
PolkitAnswer polkitAnswerFromReply(bool isAuthorized, bool isChallenge);
// Maps a D-Bus error name from the CheckAuthorization call to an answer.
PolkitAnswer polkitAnswerFromError(std::string_view errorName);

}  // namespace cxiosync::dbus
