// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/cgroup_events.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

TEST(CgroupEvents, ParsesKernelText) {
  auto r = parseCgroupEvents("populated 1\nfrozen 0\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->populated);
  EXPECT_FALSE(r->frozen);
  auto f = parseCgroupEvents("populated 0\nfrozen 1");
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->populated);
  EXPECT_TRUE(f->frozen);
}

TEST(CgroupEvents, FrozenOptionalUnknownKeysIgnored) {
  auto r = parseCgroupEvents("populated 1\n");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->frozen);
  auto u = parseCgroupEvents("future 7\npopulated 1\nweird notanumber\r\n");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_TRUE(u->populated);
}

TEST(CgroupEvents, RejectsHostileInput) {
  const std::string bad[] = {
      "",
      "\n",
      "frozen 0\n",
      "populated 2\n",
      "populated -1\n",
      "populated 01\n",
      "populated\n",
      "populated 1 1\n",
      "populated 1\npopulated 1\n",
      "populated yes\n",
      "future\npopulated 1\n",
      std::string("populated 1\0", 12),
  };
  for (const auto& b : bad) {
    auto r = parseCgroupEvents(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("cgroup.events: ", 0), 0u) << r.error().message;
    }
  }
}

}  // namespace
}  // namespace cxiosync
