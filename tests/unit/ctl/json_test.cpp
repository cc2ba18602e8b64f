// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/ctl/json.h"

#include <gtest/gtest.h>

namespace cxiosync::ctl {
namespace {

TEST(Json, ShortAndPretty) {
  Json o = Json::object();
  o.set("a", 1).set("b", Json::array().push(true).push(Json())).set("c", Json::object());
  EXPECT_EQ(o.dump(false), R"({"a":1,"b":[true,null],"c":{}})");
  EXPECT_EQ(o.dump(true), "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ],\n  \"c\": {}\n}");
}

TEST(Json, KeepsInsertionOrderAndReplaces) {
  Json o = Json::object();
  o.set("z", 1).set("a", 2).set("z", 3);
  EXPECT_EQ(o.dump(false), R"({"z":3,"a":2})");
}

TEST(Json, Numbers) {
  EXPECT_EQ(Json(uint64_t{18446744073709551615u}).dump(false), "18446744073709551615");
  EXPECT_EQ(Json(int64_t{-5}).dump(false), "-5");
  EXPECT_EQ(Json(12.3).dump(false), "12.3");
  EXPECT_EQ(Json(0.1 + 0.2).dump(false), "0.30000000000000004");
  EXPECT_EQ(Json(1.0 / 0.0).dump(false), "null");
}

}  // namespace
}  // namespace cxiosync::ctl
