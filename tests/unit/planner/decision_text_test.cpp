// SPDX-License-Identifier: GPL-2.0-or-later
// The words of decisions (policy/planner/decision_text.h): what a log line shows.
#include "policy/planner/decision_text.h"

#include <gtest/gtest.h>

namespace cxiosync {
namespace {

TEST(DecisionText, LimitsReadAsTheKernelWritesThem) {
  EXPECT_EQ(fmtLimit(uint64_t{1048576}), "1048576");
  EXPECT_EQ(fmtLimit(kUnlimited), "max");
  EXPECT_EQ(fmtLimit(std::optional<uint64_t>()), "max");  // an absent key is unlimited
  EXPECT_EQ(fmtLimit(std::optional<uint64_t>(0)), "0");
}

TEST(DecisionText, LimitChangeNamesOnlyTheKeysThatChange) {
  const IoLimits from{kUnlimited, 1048576, kUnlimited, 100};
  EXPECT_EQ(limitChange(from, IoLimits{kUnlimited, kUnlimited, kUnlimited, kUnlimited}),
            "wbps 1048576 -> max, wiops 100 -> max");
  EXPECT_EQ(limitChange(from, IoLimits{kUnlimited, 2097152, kUnlimited, 100}),
            "wbps 1048576 -> 2097152");
  EXPECT_EQ(limitChange(from, from), "no change");
  EXPECT_EQ(limitChange(IoLimits{5, std::nullopt, std::nullopt, std::nullopt},
                        IoLimits{7, std::nullopt, 9, std::nullopt}),
            "rbps 5 -> 7, riops max -> 9");
}

TEST(DecisionText, BytesAndSecondsTruncateToTenths) {
  EXPECT_EQ(fmtBytes(0), "0 B");
  EXPECT_EQ(fmtBytes((1ull << 20) - 1), "1048575 B");
  EXPECT_EQ(fmtBytes(1ull << 20), "1.0 MiB");
  EXPECT_EQ(fmtBytes((1ull << 20) * 3 / 2 + 1), "1.5 MiB");
  EXPECT_EQ(fmtBytes(32ull << 20), "32.0 MiB");
  EXPECT_EQ(fmtSeconds(std::chrono::milliseconds(1599)), "1.5s");
  EXPECT_EQ(fmtSeconds(std::chrono::seconds(120)), "120.0s");
  EXPECT_EQ(fmtSeconds(std::chrono::nanoseconds(99'999'999)), "0.0s");
}

TEST(DecisionText, SyncerAndCeiling) {
  Syncer s;
  s.tid = 101;
  s.pid = 100;
  s.comm = "backup";
  s.cgroup = *CgroupPath::parse("/system.slice/backup.service");
  s.syscall = SyncSyscall::Syncfs;
  EXPECT_EQ(describeSyncer(s), "syncfs by 100/101 'backup' in /system.slice/backup.service");
  EXPECT_EQ(describeCeiling(BoostCeiling{}), "inherit");
  EXPECT_EQ(describeCeiling(BoostCeiling{BoostCeiling::Kind::Max, 0}), "max");
  EXPECT_EQ(describeCeiling(BoostCeiling{BoostCeiling::Kind::Bytes, 4096}), "4096 B/s");
}

}  // namespace
}  // namespace cxiosync
