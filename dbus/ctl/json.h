#pragma once
// A small JSON value with a writer: insertion-ordered objects (stable output), pretty or
// short rendering, strict UTF-8 (invalid bytes become U+FFFD). Enough for cxiosyncctl --json.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "policy/json.h"

namespace cxiosync::ctl {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : v_(b) {}
  Json(int v) : v_(static_cast<int64_t>(v)) {}
  Json(int64_t v) : v_(v) {}
  Json(uint32_t v) : v_(static_cast<uint64_t>(v)) {}
  Json(uint64_t v) : v_(v) {}
  Json(double v) : v_(v) {}
  Json(const char* s) : v_(std::string(s)) {}
  Json(std::string s) : v_(std::move(s)) {}
  Json(std::string_view s) : v_(std::string(s)) {}

  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }

  Json& push(Json value);                  // arrays only
  Json& set(std::string key, Json value);  // objects only; replaces an existing key
  bool isNull() const { return v_.index() == 0; }

  std::string dump(bool pretty) const;  // no trailing newline

 private:
  explicit Json(Array a) : v_(std::move(a)) {}
  explicit Json(Object o) : v_(std::move(o)) {}
  void write(std::string& out, bool pretty, int depth) const;
  std::variant<std::nullptr_t, bool, int64_t, uint64_t, double, std::string, Array, Object> v_{
      nullptr};
};

// "\"...\"" with JSON escapes; invalid UTF-8 bytes become U+FFFD (policy/json.h).
using cxiosync::jsonQuote;

}  // namespace cxiosync::ctl
