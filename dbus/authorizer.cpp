// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/authorizer.h"

namespace cxiosync::dbus {

AuthDecision authorize(uint32_t uid, std::string_view action, std::string_view what,
                       PolkitAnswer answer, bool interactive) {
  using V = AuthDecision::Verdict;
  if (uid == 0) return {V::Allow, {}};
  const std::string attempt = "Not allowed to " + std::string(what) + " (uid " +
                              std::to_string(uid) + ", polkit action " + std::string(action) + ")";
  switch (answer) {
    case PolkitAnswer::NotAsked:
      return {V::AskPolkit, {}};
    case PolkitAnswer::Authorized:
      return {V::Allow, {}};
    case PolkitAnswer::Absent:
      return {V::Deny, attempt + ": polkit is not available, so only root may make changes"};
    case PolkitAnswer::Challenge:
      if (interactive) {
        return {V::Deny, attempt +
                             ": authentication is required but no polkit agent answered; run "
                             "as root (sudo) or start a polkit agent"};
      }
      return {V::Deny, attempt +
                           ": authentication is required; run as root, or without "
                           "--no-ask-password to be asked for a password"};
    case PolkitAnswer::NotAuthorized:
      return {V::Deny, attempt + ": polkit said no"};
    case PolkitAnswer::Failed:
      break;
  }
  return {V::Deny, attempt + ": the polkit check failed, so the change is refused"};
}

const char* Refusal::errorName() const {
  return kind == Kind::Busy ? "org.cxiosync1.Error.Busy" : "org.cxiosync1.Error.AccessDenied";
}

bool PendingLimit::tryAcquire(uint32_t uid) {
  if (held_ >= total_) return false;
  size_t& mine = byUid_[uid];
  if (mine >= perUid_) return false;
  ++mine;
  ++held_;
  return true;
}

void PendingLimit::release(uint32_t uid) {
  auto it = byUid_.find(uid);
  if (it == byUid_.end() || it->second == 0) return;
  --held_;
  if (--it->second == 0) byUid_.erase(it);
}

size_t PendingLimit::held(uint32_t uid) const {
  auto it = byUid_.find(uid);
  return it == byUid_.end() ? 0 : it->second;
}

std::string busyMessage(uint32_t uid, std::string_view what, const PendingLimit& limit) {
  const bool mine = limit.held(uid) >= limit.perUid();
  return "Not now: cannot " + std::string(what) + " (uid " + std::to_string(uid) + "): " +
         (mine ? std::to_string(limit.held(uid)) + " earlier calls of this uid"
               : std::to_string(limit.held()) + " calls") +
         " are waiting for authorization (limit " +
         std::to_string(mine ? limit.perUid() : limit.total()) +
         "); nothing was changed, try again when they are answered";
}

PolkitAnswer polkitAnswerFromReply(bool isAuthorized, bool isChallenge) {
  if (isAuthorized) return PolkitAnswer::Authorized;
  return isChallenge ? PolkitAnswer::Challenge : PolkitAnswer::NotAuthorized;
}

PolkitAnswer polkitAnswerFromError(std::string_view errorName) {
  if (errorName == "org.freedesktop.DBus.Error.ServiceUnknown" ||
      errorName == "org.freedesktop.DBus.Error.NameHasNoOwner" ||
      errorName == "org.freedesktop.DBus.Error.UnknownObject" ||
      errorName == "org.freedesktop.DBus.Error.UnknownInterface" ||
      errorName == "org.freedesktop.DBus.Error.UnknownMethod") {
    return PolkitAnswer::Absent;
  }
  if (errorName == "org.freedesktop.PolicyKit1.Error.Cancelled" ||
      errorName == "org.freedesktop.PolicyKit1.Error.NotAuthorized") {
    return PolkitAnswer::NotAuthorized;
  }
  return PolkitAnswer::Failed;
}

}  // namespace cxiosync::dbus
