// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/config/dropin.h"

#include <gtest/gtest.h>

namespace cxiosync {
namespace {

using std::chrono::seconds;

constexpr const char* kFile = "/etc/systemd/system/backup.slice.d/70-cxiosync.conf";

Result<PolicySettings> one(const std::string& text) {
  return parseDropIns({{kFile, text}});
}

std::string err(const std::string& text) {
  auto r = one(text);
  return r ? "(parsed)" : r.error().message;
}

TEST(DropIn, EveryKey) {
  auto r =
      one("[Unit]\n"
          "Description=Backups\n"
          "\n"
          "[Slice]\n"
          "IOWriteBandwidthMax=/dev/vda 1M\n"
          "\n"
          "[X-CxIOSync]\n"
          "SyncIsolation=yes\n"
          "Boost=allow\n"
          "BoostCeiling=10M\n"
          "MaxBoostSec=1min\n"
          "BoostBudget=10% of 5min\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->syncIsolation->value);
  EXPECT_EQ(r->syncIsolation->source.describe(), std::string(kFile) + ":8");
  EXPECT_EQ(r->syncIsolation->source.kind, ValueSource::Kind::DropIn);
  EXPECT_EQ(r->boost->value, BoostPermission::Allow);
  EXPECT_EQ(r->boostCeiling->value, (BoostCeiling{BoostCeiling::Kind::Bytes, 10000000}));
  EXPECT_EQ(r->maxBoost->value, seconds(60));
  EXPECT_EQ(r->boostBudget->value, (BoostBudget{10, seconds(300)}));
  EXPECT_EQ(r->boostBudget->source.line, 12);
}

TEST(DropIn, OtherSectionsAndTheirContentsAreIgnored) {
  auto r =
      one("Stray=before any section\n"
          "[Service]\n"
          "ExecStart=/bin/sh -c 'echo \\\n"
          "  hi'\n"
          "NoEqualsSignHere\n"
          "Boost=not ours\n"
          "[X-Other]\n"
          "Boost=deny\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->empty());
}

TEST(DropIn, CommentsWhitespaceAndBom) {
  auto r =
      one("\xEF\xBB\xBF# leading comment\n"
          "; another comment\n"
          "   [X-CxIOSync]   \n"
          "  # indented comment\n"
          "\tBoost   =   deny   \n"
          "SyncIsolation=off\r\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->boost->value, BoostPermission::Deny);
  EXPECT_EQ(r->boost->source.line, 5);
  EXPECT_FALSE(r->syncIsolation->value);
}

TEST(DropIn, LineContinuationJoinsWithSpaceAndSkipsCommentLines) {
  auto r =
      one("[X-CxIOSync]\n"
          "BoostBudget=10% \\\n"
          "# a comment inside the continuation is dropped\n"
          "of \\\n"
          "5min\n"
          "Boost=allow\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->boostBudget->value, (BoostBudget{10, seconds(300)}));
  EXPECT_EQ(r->boostBudget->source.line, 2);  // where the assignment starts
  EXPECT_EQ(r->boost->source.line, 6);
}

TEST(DropIn, EscapedBackslashDoesNotContinue) {
  // "\\" at the end is an escaped backslash: no continuation, so the next line stands alone.
  EXPECT_EQ(err("[X-CxIOSync]\nBoost=allow\\\\\nSyncIsolation=on\n"),
            std::string(kFile) +
                ":2: [X-CxIOSync] Boost: invalid value 'allow\\\\': expected allow or deny");
  // Continuation at end of file is still parsed.
  auto r = one("[X-CxIOSync]\nMaxBoostSec=1min \\\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->maxBoost->value, seconds(60));
}

TEST(DropIn, Quoting) {
  auto r =
      one("[X-CxIOSync]\n"
          "BoostBudget=\"25% of 2min\"\n"
          "BoostCeiling='max'\n"
          "Boost=\"deny\"\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->boostBudget->value, (BoostBudget{25, seconds(120)}));
  EXPECT_EQ(r->boostCeiling->value.kind, BoostCeiling::Kind::Max);
  EXPECT_EQ(r->boost->value, BoostPermission::Deny);
  EXPECT_EQ(err("[X-CxIOSync]\nBoost=\"allow\n"),
            std::string(kFile) + ":2: [X-CxIOSync] Boost: unbalanced quotes in value");
  EXPECT_EQ(err("[X-CxIOSync]\nBoost=\"allow\" deny\n"),
            std::string(kFile) + ":2: [X-CxIOSync] Boost: unexpected text after the closing quote");
  EXPECT_EQ(err("[X-CxIOSync]\nBoost=\"al\\\"low\"\n"),
            std::string(kFile) +
                ":2: [X-CxIOSync] Boost: invalid value 'al\"low': expected "
                "allow or deny");
}

TEST(DropIn, LaterAssignmentWinsAndEmptyResets) {
  auto r =
      one("[X-CxIOSync]\n"
          "Boost=allow\n"
          "Boost=deny\n"
          "SyncIsolation=on\n"
          "SyncIsolation=\n"
          "[Slice]\n"
          "[X-CxIOSync]\n"
          "MaxBoostSec=10\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->boost->value, BoostPermission::Deny);
  EXPECT_EQ(r->boost->source.line, 3);
  EXPECT_FALSE(r->syncIsolation);
  EXPECT_EQ(r->maxBoost->value, seconds(10));
}

TEST(DropIn, AcrossFilesInOrderWithReset) {
  auto r = parseDropIns({
      {"/usr/lib/systemd/system/a.slice.d/10-vendor.conf",
       "[X-CxIOSync]\nBoost=deny\nMaxBoostSec=5\nBoostCeiling=max\n"},
      {"/etc/systemd/system/a.slice.d/70-admin.conf", "[X-CxIOSync]\nBoost=allow\nMaxBoostSec=\n"},
  });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->boost->value, BoostPermission::Allow);
  EXPECT_EQ(r->boost->source.describe(), "/etc/systemd/system/a.slice.d/70-admin.conf:2");
  EXPECT_FALSE(r->maxBoost);  // reset by the later file
  EXPECT_EQ(r->boostCeiling->source.describe(),
            "/usr/lib/systemd/system/a.slice.d/10-vendor.conf:4");
}

TEST(DropInErrors, ExactFileLine) {
  EXPECT_EQ(err("[X-CxIOSync]\nBoost=maybe\n"),
            std::string(kFile) +
                ":2: [X-CxIOSync] Boost: invalid value 'maybe': expected allow "
                "or deny");
  EXPECT_EQ(err("[X-CxIOSync]\n\nSyncIsolaton=on\n"),
            std::string(kFile) +
                ":3: [X-CxIOSync] SyncIsolaton: unknown key (expected "
                "SyncIsolation, Boost, BoostCeiling, MaxBoostSec, BoostBudget, "
                "Tenant or TenantSync)");
  EXPECT_EQ(err("[X-CxIOSync]\nsyncisolation=on\n"),
            std::string(kFile) +
                ":2: [X-CxIOSync] syncisolation: unknown key (expected "
                "SyncIsolation, Boost, BoostCeiling, MaxBoostSec, BoostBudget, "
                "Tenant or TenantSync)");
  EXPECT_EQ(err("[X-CxIOSync]\nBoost allow\n"),
            std::string(kFile) + ":2: missing '=' in 'Boost allow' (expected Key=value)");
  EXPECT_EQ(err("[Unit]\n[X-CxIOSync\nBoost=allow\n"),
            std::string(kFile) + ":2: invalid section header '[X-CxIOSync'");
  EXPECT_EQ(err("[X-CxIOSync]\nMaxBoostSec=0\n"),
            std::string(kFile) +
                ":2: [X-CxIOSync] MaxBoostSec: max boost duration '0' is out "
                "of range (1s..86400s)");
  EXPECT_EQ(err("[X-CxIOSync]\nBoostBudget=0% of 60s\n"),
            std::string(kFile) +
                ":2: [X-CxIOSync] BoostBudget: budget percentage '0%' is out "
                "of range (1..100; use boost: deny to never boost)");
  EXPECT_EQ(err("[X-CxIOSync]\nBoostCeiling=0\n"),
            std::string(kFile) +
                ":2: [X-CxIOSync] BoostCeiling: boost ceiling must be above 0 "
                "bytes/s (use boost: deny)");
  EXPECT_EQ(err("[X-CxIOSync]\nSyncIsolation=sure\n"),
            std::string(kFile) +
                ":2: [X-CxIOSync] SyncIsolation: invalid value 'sure': "
                "expected a boolean (on/off, yes/no, true/false, 1/0)");
}

TEST(DropInErrors, ErrorInAnyFileRejectsTheWholeUnit) {
  auto r = parseDropIns({{"/etc/systemd/system/a.slice.d/10-ok.conf", "[X-CxIOSync]\nBoost=deny\n"},
                         {"/etc/systemd/system/a.slice.d/20-bad.conf", "[X-CxIOSync]\nBoost=?\n"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "/etc/systemd/system/a.slice.d/20-bad.conf:2: [X-CxIOSync] Boost: "
            "invalid value '?': expected allow or deny");
}

TEST(DropIn, AssignmentsApi) {
  auto r = parseDropInText({kFile, "[X-CxIOSync]\nBoost=deny\nBoost=\n"});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].key, DropInKey::Boost);
  EXPECT_EQ((*r)[0].value, "deny");
  EXPECT_EQ((*r)[1].value, "");
  EXPECT_EQ((*r)[1].line, 3);
  EXPECT_EQ(dropInKeyName(DropInKey::MaxBoostSec), "MaxBoostSec");
}

TEST(DropIn, HostileInputNeverCrashes) {
  for (std::string text :
       {std::string(""), std::string("\\"), std::string("[X-CxIOSync]\n\\"), std::string("[]\n"),
        std::string("["), std::string(100000, '\\'), std::string("[X-CxIOSync]\nBoost=\"\n"),
        std::string("\0=\0", 3), std::string("[X-CxIOSync]\n=\n")}) {
    auto r = one(text);
    if (!r) {
      EXPECT_EQ(r.error().message.rfind(kFile, 0), 0u) << r.error().message;
    }
  }
}

}  // namespace
}  // namespace cxiosync
