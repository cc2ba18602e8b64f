// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/psi.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

TEST(Psi, ParsesSomeAndFull) {
  auto r = parsePsi(
      "some avg10=12.34 avg60=5.00 avg300=0.10 total=123456789\n"
      "full avg10=100.00 avg60=0.00 avg300=0.00 total=42\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->some.avg10, 12.34);
  EXPECT_DOUBLE_EQ(r->some.avg60, 5.0);
  EXPECT_DOUBLE_EQ(r->some.avg300, 0.10);
  EXPECT_EQ(r->some.totalUsec, 123456789u);
  ASSERT_TRUE(r->full.has_value());
  EXPECT_DOUBLE_EQ(r->full->avg10, 100.0);
  EXPECT_EQ(r->full->totalUsec, 42u);
}

TEST(Psi, FullIsOptional) {
  auto r = parsePsi("some avg10=0.00 avg60=0.00 avg300=0.00 total=0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->full.has_value());
}

TEST(Psi, OrderKeysAndUnknownKeys) {
  auto r = parsePsi(
      "full total=1 avg300=0 avg60=1 avg10=2 newkey=whatever\r\n"
      "some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551615\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->some.totalUsec, UINT64_MAX);
  EXPECT_DOUBLE_EQ(r->full->avg10, 2.0);
}

TEST(Psi, RejectsHostileInput) {
  const std::string bad[] = {
      "",
      "\n",
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",  // no some
      "some avg10=0.00 avg60=0.00 avg300=0.00\n",          // missing total
      "some avg10=0.00 avg60=0.00 total=0\n",
      "some avg10=-1.00 avg60=0.00 avg300=0.00 total=0\n",
      "some avg10=1e5 avg60=0.00 avg300=0.00 total=0\n",
      "some avg10=inf avg60=0.00 avg300=0.00 total=0\n",
      "some avg10=nan avg60=0.00 avg300=0.00 total=0\n",
      "some avg10=.5 avg60=0.00 avg300=0.00 total=0\n",
      "some avg10=5. avg60=0.00 avg300=0.00 total=0\n",
      "some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n",
      "some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551616\n",
      "some avg10=0.00 avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
      "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nsome avg10=0.00 avg60=0.00 "
      "avg300=0.00 total=0\n",
      "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nmost avg10=0.00\n",
      "some avg10 avg60=0.00 avg300=0.00 total=0\n",
      std::string("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\0", 47),
      "some avg10=" + std::string(400, '9') + ".0 avg60=0.00 avg300=0.00 total=0\n",
  };
  for (const auto& b : bad) {
    auto r = parsePsi(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("pressure: ", 0), 0u) << r.error().message;
    }
  }
}

TEST(Psi, ErrorNamesMissingKeys) {
  auto r = parsePsi("some avg10=0.00 avg300=0.00\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("line 1"), std::string::npos);
  EXPECT_NE(r.error().message.find("avg60, total"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace cxiosync
