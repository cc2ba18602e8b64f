// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// One table model for human and JSON output, as systemd's format-table: a verb fills a Table
// of typed cells once, and the same table prints as an aligned table, as a "Key: value" show
// view, as an inline event line, or as JSON (nlohmann::ordered_json: key order is the column
// order). cxiosyncctl (dbus/ctl) and cxiosync-loop (daemon/app, daemon/blockdev/devices) both
// print through it, so it lives in policy/ (pure: no I/O), which every layer sees.
//
// Columns carry a JSON key and a human header; a column without a key is human only (a
// composite such as "1.0 MiB/s (8:0)"), one without a header is JSON only. display() picks
// the human columns and their order, so both outputs keep their own order.
//
// Strings: kernel names are bytes. Cell::bytes() always writes them through textFromBytes
// (policy/bytes_text.h, the reversible \xNN escape); Cell::text() takes UTF-8 text (D-Bus
// strings are) and escapes it the same way only when it is not valid UTF-8, so nothing that
// reaches JSON or the terminal is invalid UTF-8.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/json.h"

namespace cxiosync::output {

using ::cxiosync::Json;

// A JSON number for a double: integral values below 1e15 as integers ("7", not "7.0": what
// the metrics samples always printed), NaN and infinities as null.
Json jsonNumber(double v);
// JSON text: pretty (two spaces, ": ") or short (one line), no trailing newline.
std::string jsonDump(const Json& j, bool pretty);

enum class Color { None, Green, Red };

class Table;

class Cell {
 public:
  enum class Type {
    Absent,
    Null,
    Text,
    Bool,
    Int,
    Uint,
    Double,
    Size,
    Rate,
    Iops,
    Duration,
    Time,
    List,
    Nested
  };
  // How a nested table is written in JSON: an array of row objects, the first row as one
  // object, or an object keyed by the first column (the rest: one value, or an object).
  enum class Nest { Array, Object, Keyed };

  Cell() = default;  // null; human ""
  static Cell null(std::string human = "-");
  // No value: the row's JSON object leaves the key out; human "".
  static Cell absent();
  static Cell text(std::string_view utf8);
  static Cell bytes(std::string_view raw);
  // Text, or null (human `none`) when empty.
  static Cell textOrNull(std::string_view utf8, std::string none = "-");
  static Cell boolean(bool b, std::string yes = "yes", std::string no = "no");
  static Cell integer(int64_t v);
  static Cell uinteger(uint64_t v);
  static Cell real(double v);
  static Cell size(uint64_t bytes);              // human formatBytes
  static Cell rate(uint64_t bytesPerSec);        // a limit: UINT64_MAX is null / "max"
  static Cell iops(uint64_t v);                  // a limit: UINT64_MAX is null / "max"
  static Cell duration(uint64_t usec);           // human formatDuration
  static Cell timestamp(uint64_t realtimeUsec);  // human formatTimestamp
  static Cell list(std::vector<Cell> items, std::string separator = ",");
  static Cell nested(Table t, Nest how = Nest::Array);

  // Human text instead of the typed one; JSON stays the typed value.
  Cell& shown(std::string human);
  // ANSI colour for the human text (only when rendering with colour).
  Cell& color(Color c);
  // Show view: the row is left out (its JSON stays).
  Cell& hidden();

  Type type() const { return type_; }
  bool isHidden() const { return hidden_; }
  bool hasShown() const { return hasShown_; }
  std::string human() const;  // without colour
  std::string human(bool color) const;
  Json json() const;
  const std::vector<Cell>& items() const { return items_; }
  const Table* table() const { return nested_.get(); }

 private:
  static Cell unsignedCell(Type t, uint64_t v);
  Type type_ = Type::Null;
  std::string str_;  // Text; human for Null and Bool
  std::string alt_;  // Bool: the "no" text; List: the separator
  uint64_t u_ = 0;
  int64_t i_ = 0;
  double d_ = 0;
  bool b_ = false;
  bool hidden_ = false;
  bool hasShown_ = false;
  std::string shown_;
  Color color_ = Color::None;
  std::vector<Cell> items_;
  std::shared_ptr<const Table> nested_;
  Nest nest_ = Nest::Array;
};

struct Column {
  std::string key;     // JSON key; "" = human only
  std::string header;  // human header; "" = JSON only
  bool right = false;  // right-aligned in the human table
};

class Table {
 public:
  explicit Table(std::vector<Column> columns);
  // A human-only table of text columns (headers only, no JSON keys).
  explicit Table(std::initializer_list<const char*> headers);

  // One row of JSON-only columns: a record such as {"detached": true, "note": ""}.
  static Table record(std::vector<std::pair<std::string, Cell>> fields);

  Table& addRow(std::vector<Cell> cells);
  Table& addRow(const std::vector<std::string>& texts);  // Cell::text of each
  void rightAlign(size_t column) { columns_.at(column).right = true; }
  // Human output: these columns in this order (default: every column with a header).
  void display(std::vector<size_t> columns) { display_ = std::move(columns); }
  size_t rows() const { return rows_.size(); }
  const std::vector<Column>& columns() const { return columns_; }
  const Cell& cell(size_t row, size_t column) const { return rows_.at(row).at(column); }

  // Aligned table in systemctl style: upper-case headers (bold with colour), two spaces
  // between columns, trailing spaces dropped.
  std::string render(bool legend, bool color) const;
  // Each row as "Header: value" lines, headers right-aligned to keyWidth; a List cell puts
  // each item on its own line; hidden cells are left out.
  std::string renderShow(size_t keyWidth, bool color) const;
  // Row `row` as one line: the first displayed cell, then " key=value" for the others
  // (value quoted when empty, or when a non-text value has a space in it).
  std::string renderInline(size_t row) const;

  Json json() const;               // array of row objects
  Json rowJson(size_t row) const;  // one object
  Json keyedJson() const;          // Cell::Nest::Keyed

 private:
  std::vector<size_t> shownColumns() const;
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
  std::vector<size_t> display_;
};

}  // namespace cxiosync::output
