// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/output/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "policy/bytes_text.h"
#include "policy/output/format.h"

namespace cxiosync::output {

namespace {

constexpr uint64_t kMax = UINT64_MAX;

bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string paint(const std::string& s, Color c) {
  switch (c) {
    case Color::Green:
      return "\033[0;1;32m" + s + "\033[0m";
    case Color::Red:
      return "\033[0;1;31m" + s + "\033[0m";
    case Color::None:
      break;
  }
  return s;
}

}  // namespace

Json jsonNumber(double v) {
  if (!std::isfinite(v)) return Json();
  // Below 1e15 an integral double prints as its digits ("%.15g" did the same before: the
  // text stays byte-identical); above, nlohmann's shortest round-trip form.
  if (v == std::floor(v) && std::fabs(v) < 1e15) return static_cast<int64_t>(v);
  return v;
}

std::string jsonDump(const Json& j, bool pretty) {
  return ::cxiosync::jsonDump(j, pretty ? 2 : -1);
}

Cell Cell::null(std::string human) {
  Cell c;
  c.str_ = std::move(human);
  return c;
}

Cell Cell::absent() {
  Cell c;
  c.type_ = Type::Absent;
  return c;
}

Cell Cell::text(std::string_view utf8) {
  Cell c;
  c.type_ = Type::Text;
  c.str_ = validUtf8(utf8) ? std::string(utf8) : textFromBytes(utf8);
  return c;
}

Cell Cell::bytes(std::string_view raw) {
  Cell c;
  c.type_ = Type::Text;
  c.str_ = textFromBytes(raw);
  return c;
}

Cell Cell::textOrNull(std::string_view utf8, std::string none) {
  return utf8.empty() ? null(std::move(none)) : text(utf8);
}

Cell Cell::boolean(bool b, std::string yes, std::string no) {
  Cell c;
  c.type_ = Type::Bool;
  c.b_ = b;
  c.str_ = std::move(yes);
  c.alt_ = std::move(no);
  return c;
}

Cell Cell::integer(int64_t v) {
  Cell c;
  c.type_ = Type::Int;
  c.i_ = v;
  return c;
}

Cell Cell::real(double v) {
  Cell c;
  c.type_ = Type::Double;
  c.d_ = v;
  return c;
}

Cell Cell::unsignedCell(Type t, uint64_t v) {
  Cell c;
  c.type_ = t;
  c.u_ = v;
  return c;
}

Cell Cell::uinteger(uint64_t v) {
  return unsignedCell(Type::Uint, v);
}
Cell Cell::size(uint64_t bytes) {
  return unsignedCell(Type::Size, bytes);
}
Cell Cell::rate(uint64_t bytesPerSec) {
  return unsignedCell(Type::Rate, bytesPerSec);
}
Cell Cell::iops(uint64_t v) {
  return unsignedCell(Type::Iops, v);
}
Cell Cell::duration(uint64_t usec) {
  return unsignedCell(Type::Duration, usec);
}
Cell Cell::timestamp(uint64_t realtimeUsec) {
  return unsignedCell(Type::Time, realtimeUsec);
}

Cell Cell::list(std::vector<Cell> items, std::string separator) {
  Cell c;
  c.type_ = Type::List;
  c.items_ = std::move(items);
  c.alt_ = std::move(separator);
  return c;
}

Cell Cell::nested(Table t, Nest how) {
  Cell c;
  c.type_ = Type::Nested;
  c.nested_ = std::make_shared<const Table>(std::move(t));
  c.nest_ = how;
  return c;
}

Cell& Cell::shown(std::string human) {
  shown_ = std::move(human);
  hasShown_ = true;
  return *this;
}

Cell& Cell::color(Color c) {
  color_ = c;
  return *this;
}

Cell& Cell::hidden() {
  hidden_ = true;
  return *this;
}

std::string Cell::human(bool color) const {
  return color ? paint(human(), color_) : human();
}

std::string Cell::human() const {
  if (hasShown_) return shown_;
  switch (type_) {
    case Type::Absent:
    case Type::Null:
    case Type::Text:
      return str_;
    case Type::Bool:
      return b_ ? str_ : alt_;
    case Type::Int:
      return std::to_string(i_);
    case Type::Uint:
      return std::to_string(u_);
    case Type::Double: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", d_);
      return buf;
    }
    case Type::Size:
      return formatBytes(u_);
    case Type::Rate:
      return formatRate(u_);
    case Type::Iops:
      return formatIops(u_);
    case Type::Duration:
      return formatDuration(u_);
    case Type::Time:
      return formatTimestamp(u_);
    case Type::List: {
      std::string out;
      for (const auto& i : items_) out += (out.empty() ? "" : alt_) + i.human();
      return out;
    }
    case Type::Nested:
      return nested_->render(true, false);
  }
  return str_;
}

Json Cell::json() const {
  switch (type_) {
    case Type::Absent:
    case Type::Null:
      return Json();
    case Type::Text:
      return str_;
    case Type::Bool:
      return b_;
    case Type::Int:
      return i_;
    case Type::Double:
      return jsonNumber(d_);
    case Type::Rate:
    case Type::Iops:
      return u_ == kMax ? Json() : Json(u_);
    case Type::Uint:
    case Type::Size:
    case Type::Duration:
    case Type::Time:
      return u_;
    case Type::List: {
      Json a = Json::array();
      for (const auto& i : items_) a.push_back(i.json());
      return a;
    }
    case Type::Nested:
      if (nest_ == Nest::Keyed) return nested_->keyedJson();
      if (nest_ == Nest::Object) return nested_->rows() ? nested_->rowJson(0) : Json::object();
      return nested_->json();
  }
  return Json();
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

Table::Table(std::initializer_list<const char*> headers) {
  for (const char* h : headers) columns_.push_back(Column{"", h, false});
}

Table Table::record(std::vector<std::pair<std::string, Cell>> fields) {
  std::vector<Column> columns;
  std::vector<Cell> row;
  for (auto& [key, cell] : fields) {
    columns.push_back({key, ""});
    row.push_back(std::move(cell));
  }
  Table t(std::move(columns));
  t.addRow(std::move(row));
  return t;
}

Table& Table::addRow(std::vector<Cell> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
  return *this;
}

Table& Table::addRow(const std::vector<std::string>& texts) {
  std::vector<Cell> cells;
  for (const auto& t : texts) cells.push_back(Cell::text(t));
  return addRow(std::move(cells));
}

std::vector<size_t> Table::shownColumns() const {
  if (!display_.empty()) return display_;
  std::vector<size_t> all;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (!columns_[i].header.empty()) all.push_back(i);
  }
  return all;
}

std::string Table::render(bool legend, bool color) const {
  const std::vector<size_t> shown = shownColumns();
  std::vector<size_t> width(shown.size(), 0);
  for (size_t i = 0; i < shown.size(); ++i) {
    if (legend) width[i] = displayWidth(columns_[shown[i]].header);
    for (const auto& row : rows_) {
      width[i] = std::max(width[i], displayWidth(row[shown[i]].human()));
    }
  }
  // One line; `texts` are the plain cells (for widths), `painted` what is printed.
  auto line = [&](const std::vector<std::string>& texts, const std::vector<std::string>& painted) {
    std::string out;
    for (size_t i = 0; i < texts.size(); ++i) {
      bool last = i + 1 == texts.size();
      size_t pad = width[i] - displayWidth(texts[i]);
      bool right = columns_[shown[i]].right;
      if (right) out.append(pad, ' ');
      out += painted[i];
      if (!right && !last) out.append(pad, ' ');
      if (!last) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  std::string out;
  if (legend) {
    std::vector<std::string> headers;
    for (size_t c : shown) headers.push_back(columns_[c].header);
    std::string h = line(headers, headers);
    out += color ? "\033[1m" + h + "\033[0m\n" : h + "\n";
  }
  for (const auto& row : rows_) {
    std::vector<std::string> texts, painted;
    for (size_t c : shown) {
      texts.push_back(row[c].human());
      painted.push_back(row[c].human(color));
    }
    out += line(texts, painted) + "\n";
  }
  return out;
}

std::string Table::renderShow(size_t keyWidth, bool color) const {
  std::string out;
  auto line = [&](const std::string& key, const std::string& value) {
    out += std::string(keyWidth - std::min(keyWidth, displayWidth(key)), ' ') + key + ": " + value +
           "\n";
  };
  for (const auto& row : rows_) {
    for (size_t c : shownColumns()) {
      const Cell& cell = row[c];
      if (cell.isHidden()) continue;
      const std::string& key = columns_[c].header;
      if (cell.type() == Cell::Type::List && !cell.hasShown()) {
        bool first = true;
        for (const auto& item : cell.items()) {
          line(first ? key : "", item.human(color));
          first = false;
        }
        continue;
      }
      line(key, cell.human(color));
    }
  }
  return out;
}

std::string Table::renderInline(size_t row) const {
  std::string out;
  bool first = true;
  for (size_t c : shownColumns()) {
    const Cell& cell = rows_.at(row)[c];
    std::string v = cell.human();
    if (first) {
      out = v;
      first = false;
      continue;
    }
    bool quote = v.empty() || (cell.type() != Cell::Type::Text && v.find(' ') != std::string::npos);
    const std::string& key = columns_[c].key.empty() ? columns_[c].header : columns_[c].key;
    out += " " + key + "=" + (quote ? "\"" + v + "\"" : v);
  }
  return out;
}

Json Table::rowJson(size_t row) const {
  Json o = Json::object();
  for (size_t c = 0; c < columns_.size(); ++c) {
    const Cell& cell = rows_.at(row)[c];
    if (!columns_[c].key.empty() && cell.type() != Cell::Type::Absent) {
      o[columns_[c].key] = cell.json();
    }
  }
  return o;
}

Json Table::json() const {
  Json a = Json::array();
  for (size_t r = 0; r < rows_.size(); ++r) a.push_back(rowJson(r));
  return a;
}

Json Table::keyedJson() const {
  Json o = Json::object();
  for (const auto& row : rows_) {
    const std::string key = row.at(0).human();
    if (columns_.size() == 2) {
      o[key] = row[1].json();
      continue;
    }
    Json v = Json::object();
    for (size_t c = 1; c < columns_.size(); ++c) {
      if (!columns_[c].key.empty()) v[columns_[c].key] = row[c].json();
    }
    o[key] = std::move(v);
  }
  return o;
}

}  // namespace cxiosync::output
