// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/authorizer.h"

#include <gtest/gtest.h>

namespace cxiosync::dbus {
namespace {

using V = AuthDecision::Verdict;
constexpr const char* kAction = "org.cxiosync1.manage";

AuthDecision decide(uint32_t uid, PolkitAnswer a, bool interactive = false) {
  return authorize(uid, kAction, "set sync_isolation of /a", a, interactive);
}

TEST(Authorizer, RootIsAlwaysAllowed) {
  for (auto a : {PolkitAnswer::NotAsked, PolkitAnswer::Absent, PolkitAnswer::NotAuthorized,
                 PolkitAnswer::Challenge, PolkitAnswer::Failed}) {
    EXPECT_EQ(decide(0, a).verdict, V::Allow);
  }
}

TEST(Authorizer, OthersNeedPolkit) {
  EXPECT_EQ(decide(1000, PolkitAnswer::NotAsked).verdict, V::AskPolkit);
  EXPECT_EQ(decide(1000, PolkitAnswer::Authorized).verdict, V::Allow);
  for (auto a : {PolkitAnswer::Absent, PolkitAnswer::NotAuthorized, PolkitAnswer::Challenge,
                 PolkitAnswer::Failed}) {
    auto d = decide(1000, a);
    EXPECT_EQ(d.verdict, V::Deny);
    EXPECT_NE(d.message.find("uid 1000"), std::string::npos) << d.message;
    EXPECT_NE(d.message.find(kAction), std::string::npos) << d.message;
  }
}

TEST(Authorizer, MessagesSayWhatToDo) {
  EXPECT_NE(decide(1000, PolkitAnswer::Absent).message.find("only root"), std::string::npos);
  EXPECT_NE(decide(1000, PolkitAnswer::Challenge, false).message.find("--no-ask-password"),
            std::string::npos);
  EXPECT_NE(decide(1000, PolkitAnswer::Challenge, true).message.find("polkit agent"),
            std::string::npos);
}

TEST(Authorizer, PolkitReplyAndErrors) {
  EXPECT_EQ(polkitAnswerFromReply(true, false), PolkitAnswer::Authorized);
  EXPECT_EQ(polkitAnswerFromReply(true, true), PolkitAnswer::Authorized);
  EXPECT_EQ(polkitAnswerFromReply(false, true), PolkitAnswer::Challenge);
  EXPECT_EQ(polkitAnswerFromReply(false, false), PolkitAnswer::NotAuthorized);
  EXPECT_EQ(polkitAnswerFromError("org.freedesktop.DBus.Error.ServiceUnknown"),
            PolkitAnswer::Absent);
  EXPECT_EQ(polkitAnswerFromError("org.freedesktop.DBus.Error.NameHasNoOwner"),
            PolkitAnswer::Absent);
  EXPECT_EQ(polkitAnswerFromError("org.freedesktop.PolicyKit1.Error.Cancelled"),
            PolkitAnswer::NotAuthorized);
  EXPECT_EQ(polkitAnswerFromError("org.freedesktop.DBus.Error.NoReply"), PolkitAnswer::Failed);
  EXPECT_EQ(polkitFlags(true), 1u);
  EXPECT_EQ(polkitFlags(false), 0u);
}

}  // namespace
}  // namespace cxiosync::dbus
