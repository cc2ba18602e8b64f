// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/json.h"

#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace cxiosync {

std::string jsonDump(const Json& j, int indent) {
  // replace, not strict: a string that skipped textFromBytes must not throw out of a writer.
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

Result<Json> jsonParse(std::string_view text) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return makeError(std::string("JSON: ") + e.what());
  }
}

const Json* jsonMember(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::optional<uint64_t> jsonUint(const Json& obj, std::string_view key) {
  const Json* v = jsonMember(obj, key);
  if (!v || !v->is_number_unsigned()) return std::nullopt;
  return v->get<uint64_t>();
}

std::optional<int64_t> jsonInt(const Json& obj, std::string_view key) {
  const Json* v = jsonMember(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    auto u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  return std::nullopt;
}

std::optional<bool> jsonBool(const Json& obj, std::string_view key) {
  const Json* v = jsonMember(obj, key);
  if (!v || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

std::optional<std::string> jsonText(const Json& obj, std::string_view key) {
  const Json* v = jsonMember(obj, key);
  if (!v || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::optional<std::string> jsonByteString(const Json& obj, std::string_view key) {
  auto t = jsonText(obj, key);
  if (!t) return std::nullopt;
  return bytesFromText(*t);
}

JsonFields::JsonFields(const Json& obj) : obj_(obj) {
  if (!obj.is_object()) error_ = "not an object";
}

void JsonFields::fail(std::string_view key, const char* what) {
  if (error_.empty()) error_ = "\"" + textFromBytes(key) + "\" " + what;
}

JsonFields& JsonFields::require(std::string_view key) {
  if (ok() && !jsonMember(obj_, key)) fail(key, "is missing");
  return *this;
}

template <class T>
JsonFields& JsonFields::integer(std::string_view key, T& out) {
  if (!ok() || !jsonMember(obj_, key)) return *this;
  // Wide enough for every T; std::in_range says whether the value fits T.
  if constexpr (std::is_signed_v<T>) {
    auto v = jsonInt(obj_, key);
    if (!v || !std::in_range<T>(*v)) return fail(key, "is not an integer in range"), *this;
    out = static_cast<T>(*v);
  } else {
    auto v = jsonUint(obj_, key);
    if (!v || !std::in_range<T>(*v))
      return fail(key, "is not a non-negative integer in range"), *this;
    out = static_cast<T>(*v);
  }
  return *this;
}

JsonFields& JsonFields::num(std::string_view key, int& out) {
  return integer(key, out);
}
JsonFields& JsonFields::num(std::string_view key, int64_t& out) {
  return integer(key, out);
}
JsonFields& JsonFields::num(std::string_view key, uint32_t& out) {
  return integer(key, out);
}
JsonFields& JsonFields::num(std::string_view key, uint64_t& out) {
  return integer(key, out);
}

JsonFields& JsonFields::flag(std::string_view key, bool& out) {
  if (!ok() || !jsonMember(obj_, key)) return *this;
  if (auto v = jsonBool(obj_, key))
    out = *v;
  else
    fail(key, "is not a boolean");
  return *this;
}

JsonFields& JsonFields::text(std::string_view key, std::string& out) {
  if (!ok() || !jsonMember(obj_, key)) return *this;
  if (auto v = jsonText(obj_, key))
    out = std::move(*v);
  else
    fail(key, "is not a string");
  return *this;
}

JsonFields& JsonFields::bytes(std::string_view key, std::string& out) {
  text(key, out);
  if (ok() && jsonMember(obj_, key)) out = bytesFromText(out);
  return *this;
}

}  // namespace cxiosync
