// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/model/dev_num.h"

#include <gtest/gtest.h>

namespace cxiosync {
namespace {

TEST(DevNum, ParsesMajorMinor) {
  auto d = parseDevNum("254:16");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->major, 254u);
  EXPECT_EQ(d->minor, 16u);
  EXPECT_EQ(d->str(), "254:16");
}

TEST(DevNum, RejectsMalformed) {
  for (const char* bad :
       {"", ":", "8:", ":0", "8", "-8:0", "8:+0", "8:0 ", "4294967296:0", "a:b"}) {
    EXPECT_FALSE(parseDevNum(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace cxiosync
