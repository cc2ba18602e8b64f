// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// cxiosyncctl's JSON value: a thin handle on nlohmann::ordered_json (policy/output/table.h),
// with the chaining the verbs use (set/push) and the two dumps of --json=pretty|short.
// Insertion-ordered objects (stable output); set() replaces an existing key in place.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "policy/json.h"
#include "policy/output/table.h"

namespace cxiosync::ctl {

class Json {
 public:
  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : v_(b) {}
  Json(int v) : v_(static_cast<int64_t>(v)) {}
  Json(int64_t v) : v_(v) {}
  Json(uint32_t v) : v_(static_cast<uint64_t>(v)) {}
  Json(uint64_t v) : v_(v) {}
  Json(double v) : v_(output::jsonNumber(v)) {}
  Json(const char* s) : v_(std::string(s)) {}
  Json(std::string s) : v_(std::move(s)) {}
  Json(std::string_view s) : v_(std::string(s)) {}
  explicit Json(output::Json v) : v_(std::move(v)) {}

  static Json array() { return Json(output::Json::array()); }
  static Json object() { return Json(output::Json::object()); }

  Json& push(Json value) {  // arrays only
    v_.push_back(std::move(value.v_));
    return *this;
  }
  Json& set(std::string key, Json value) {  // objects only; replaces an existing key
    v_[std::move(key)] = std::move(value.v_);
    return *this;
  }
  bool isNull() const { return v_.is_null(); }
  const output::Json& value() const { return v_; }

  std::string dump(bool pretty) const { return output::jsonDump(v_, pretty); }  // no newline

 private:
  output::Json v_;
};

// "\"...\"" with JSON escapes; invalid UTF-8 bytes become U+FFFD (policy/json.h).

}  // namespace cxiosync::ctl
