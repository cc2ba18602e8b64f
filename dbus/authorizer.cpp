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
