// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/output/table.h"

#include <gtest/gtest.h>

namespace cxiosync::output {
namespace {

Table sample() {
  Table t({{"path", "PATH"},
           {"", "NOTE"},
           {"dirty", "DIRTY", true},
           {"wbps", "LIMIT"},
           {"on", "ON"},
           {"extra", ""}});
  t.addRow({Cell::text("/a.slice"), Cell::text("first"), Cell::size(1536), Cell::rate(UINT64_MAX),
            Cell::boolean(true), Cell::absent()});
  t.addRow({Cell::text("/b"), Cell::text(""), Cell::size(0), Cell::rate(1048576),
            Cell::boolean(false).color(Color::Red), Cell::uinteger(7)});
  return t;
}

TEST(Table, HumanTableAlignsTypedCells) {
  EXPECT_EQ(sample().render(true, false),
            "PATH      NOTE     DIRTY  LIMIT    ON\n"
            "/a.slice  first  1.5 KiB  max      yes\n"
            "/b                   0 B  1 MiB/s  no\n")
      << "the header row is aligned to the widest cell";
}

TEST(Table, JsonKeepsColumnOrderNullsAndLeavesAbsentKeysOut) {
  EXPECT_EQ(jsonDump(sample().json(), false),
            R"([{"path":"/a.slice","dirty":1536,"wbps":null,"on":true},)"
            R"({"path":"/b","dirty":0,"wbps":1048576,"on":false,"extra":7}])");
  EXPECT_EQ(
      jsonDump(sample().rowJson(0), true),
      "{\n  \"path\": \"/a.slice\",\n  \"dirty\": 1536,\n  \"wbps\": null,\n  \"on\": true\n}");
}

TEST(Table, DisplayPicksHumanColumnsAndOrder) {
  Table t = sample();
  t.display({4, 0});
  EXPECT_EQ(t.render(false, false), "yes  /a.slice\nno   /b\n");
  EXPECT_EQ(t.render(false, true), "yes  /a.slice\n\033[0;1;31mno\033[0m   /b\n")
      << "colour only when asked";
}

TEST(Table, ColorDoesNotCountInWidths) {
  Table t({{"a", "A"}, {"b", "B"}});
  t.addRow({Cell::text("x").color(Color::Green), Cell::text("1")});
  t.addRow({Cell::text("long"), Cell::text("2")});
  EXPECT_EQ(t.render(false, true), "\033[0;1;32mx\033[0m     1\nlong  2\n");
}

TEST(Table, ShowViewListsAndHiddenRows) {
  Table t({{"state", "State"}, {"files", "Config"}, {"gone", "Gone"}, {"since", "Since"}});
  t.addRow({Cell::text("running"), Cell::list({Cell::text("/a"), Cell::text("/b")}),
            Cell::text("x").hidden(), Cell::timestamp(1764446400000000ull)});
  EXPECT_EQ(t.renderShow(8, false),
            "   State: running\n"
            "  Config: /a\n"
            "        : /b\n"
            "   Since: 2025-11-29 20:00:00 UTC\n");
  EXPECT_EQ(jsonDump(t.rowJson(0), false),
            R"({"state":"running","files":["/a","/b"],"gone":"x","since":1764446400000000})");
}

TEST(Table, NestedTablesAsArrayObjectOrKeyed) {
  Table labels({{"k", ""}, {"v", ""}});
  labels.addRow({Cell::text("dev"), Cell::text("8:0")});
  Table policy({{"knob", "KNOB"}, {"value", "VALUE"}, {"source", "SOURCE"}});
  policy.addRow({Cell::text("boost"), Cell::text("deny"), Cell::text("runtime")});
  Table rec = Table::record({{"labels", Cell::nested(labels, Cell::Nest::Keyed)},
                             {"policy", Cell::nested(policy, Cell::Nest::Keyed)},
                             {"first", Cell::nested(policy, Cell::Nest::Object)},
                             {"all", Cell::nested(labels)}});
  EXPECT_EQ(jsonDump(rec.rowJson(0), false),
            R"({"labels":{"dev":"8:0"},"policy":{"boost":{"value":"deny","source":"runtime"}},)"
            R"("first":{"knob":"boost","value":"deny","source":"runtime"},)"
            R"("all":[{"k":"dev","v":"8:0"}]})");
}

TEST(Table, InlineEventLine) {
  Table t({{"event", "EVENT"}, {"cgroup", "cgroup"}, {"why", "why"}, {"duration_usec", "d"}});
  t.addRow(
      {Cell::text("BoostEnded"), Cell::text("/a b"), Cell::text(""), Cell::duration(12300000)});
  EXPECT_EQ(t.renderInline(0), R"(BoostEnded cgroup=/a b why="" duration_usec="12.3 s")");
}

TEST(Table, BytesAreEscapedReversiblyTextOnlyWhenInvalid) {
  EXPECT_EQ(Cell::bytes("/a\xff").human(), "/a\\xff");
  EXPECT_EQ(Cell::text("/a\xff").human(), "/a\\xff");
  EXPECT_EQ(Cell::text("/a\\xff").human(), "/a\\xff") << "valid text is left as it is";
  EXPECT_EQ(Cell::bytes("/a\\xff").human(), "/a\\x5cxff") << "bytes: the escape is reversible";
  EXPECT_EQ(jsonDump(Cell::text("\xc0\xaf→").json(), false), "\"\\\\xc0\\\\xaf→\"");
}

TEST(Table, NumbersPrintAsBeforeAndLimitsMaxIsNull) {
  EXPECT_EQ(jsonDump(jsonNumber(7.0), false), "7");
  EXPECT_EQ(jsonDump(jsonNumber(12.5), false), "12.5");
  EXPECT_EQ(jsonDump(jsonNumber(0.1 + 0.2), false), "0.30000000000000004");
  EXPECT_EQ(jsonDump(jsonNumber(1.0 / 0.0), false), "null");
  EXPECT_EQ(jsonDump(Cell::iops(UINT64_MAX).json(), false), "null");
  EXPECT_EQ(Cell::iops(UINT64_MAX).human(), "max");
  EXPECT_EQ(Cell::iops(200).human(), "200 IOPS");
  EXPECT_EQ(Cell::textOrNull("").human(), "-");
  EXPECT_TRUE(Cell::textOrNull("").json().is_null());
}

}  // namespace
}  // namespace cxiosync::output
