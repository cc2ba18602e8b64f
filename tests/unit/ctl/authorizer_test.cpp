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

// Issue 16 (audit M4): 16 pending checks per uid, a total for everyone; a slot comes back
// when released, never twice.
TEST(PendingLimit, CapsPerUidAndInTotal) {
  PendingLimit limit(16, 40);
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(limit.tryAcquire(1000)) << i;
  EXPECT_FALSE(limit.tryAcquire(1000)) << "the 17th of one uid";
  EXPECT_EQ(limit.held(1000), 16u);
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(limit.tryAcquire(1001)) << i;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(limit.tryAcquire(1002)) << i;
  EXPECT_EQ(limit.held(), 40u);
  EXPECT_FALSE(limit.tryAcquire(1003)) << "the total is reached";
  EXPECT_NE(busyMessage(1003, "reload the configuration", limit).find("40 calls"),
            std::string::npos);
  EXPECT_NE(busyMessage(1000, "reload the configuration", limit).find("limit 16"),
            std::string::npos)
      << busyMessage(1000, "reload the configuration", limit);
  limit.release(1000);
  EXPECT_TRUE(limit.tryAcquire(1003));
  EXPECT_FALSE(limit.tryAcquire(1000));
  limit.release(1003);
  limit.release(1003);  // not held: no effect
  EXPECT_EQ(limit.held(), 39u);
  EXPECT_EQ(limit.held(1003), 0u);
  EXPECT_TRUE(limit.tryAcquire(1000));
  EXPECT_FALSE(limit.tryAcquire(1000));
}

TEST(PendingLimit, RefusalNames) {
  EXPECT_STREQ(Refusal::busy("x").errorName(), "org.cxiosync1.Error.Busy");
  EXPECT_STREQ(Refusal::denied("x").errorName(), "org.cxiosync1.Error.AccessDenied");
}

}  // namespace
}  // namespace cxiosync::dbus
