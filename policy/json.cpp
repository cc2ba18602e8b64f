// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/json.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace cxiosync {

std::string jsonDump(const Json& j, int indent) {
  // replace, not strict: a string that skipped textFromBytes must not throw out of a writer.
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

namespace {

// nlohmann's DOM builder, without exceptions: the parser hands a parse error to the SAX
// handler, which keeps its message. Json::parse would throw it instead, and in the state-file
// readers a malformed file is the common case under fuzzing (and costly with the sanitizers'
// unwinder: fuzz_journal ran at ~720 exec/s, most of it in __cxa_throw).
class DomBuilder {
 public:
  explicit DomBuilder(Json& root) : dom_(root, /*allow_exceptions=*/false) {}
  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    return dom_.number_float(v, s);
  }
  bool string(Json::string_t& v) { return dom_.string(v); }
  bool binary(Json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return dom_.start_object(n); }
  bool key(Json::string_t& v) { return dom_.key(v); }
  bool end_object() { return dom_.end_object(); }
  bool start_array(std::size_t n) { return dom_.start_array(n); }
  bool end_array() { return dom_.end_array(); }
  template <class Exception>
  bool parse_error(std::size_t pos, const std::string& token, const Exception& e) {
    if (error_.empty()) error_ = std::string("JSON: ") + e.what();
    return dom_.parse_error(pos, token, e);
  }
  const std::string& error() const { return error_; }

 private:
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::string error_;
};

}  // namespace

Result<Json> jsonParse(std::string_view text) {
  Json root;
  DomBuilder sax(root);
  // strict: trailing bytes after the document are an error, as with Json::parse.
  const bool ok = Json::sax_parse(text.begin(), text.end(), &sax);
  if (!ok || !sax.error().empty() || root.is_discarded())
    return makeError(sax.error().empty() ? std::string("JSON: unreadable") : sax.error());
  return root;
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
