// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// JSON for every file and every --json output cxiosync writes: nlohmann-json, always as
// `Json` (nlohmann::ordered_json), so keys come out in the order the code adds them (plain
// nlohmann::json sorts them, which would change files and outputs that tests compare).
//
// Bytes are not text. Cgroup paths, command names, device and file names come from the
// kernel and need not be UTF-8; JSON strings must be. Every writer turns such a field into
// text with textFromBytes (policy/bytes_text.h: an invalid byte becomes \xNN, a backslash that
// would read as such an escape becomes \x5c) and every reader turns it back with
// bytesFromText, so any path the kernel can hold round-trips, and valid UTF-8 (everything
// files written before this rule hold) reads as it always did. jsonDump never throws: if an
// invalid byte still reached it, it is written as U+FFFD (a bug, but not a crash).
//
// Readers are tolerant across versions: unknown keys are ignored, a field of the wrong type
// is reported by the accessors below as absent, and each caller decides what absent means.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "policy/bytes_text.h"
#include "policy/result.h"

namespace cxiosync {

using Json = nlohmann::ordered_json;

// `j` as text: compact (indent < 0) or pretty with `indent` spaces, no trailing newline.
std::string jsonDump(const Json& j, int indent = -1);

// Parses one JSON document. Errors are values (nlohmann's message, with the byte offset).
Result<Json> jsonParse(std::string_view text);

// The text form of a byte string field (textFromBytes), ready to put into a Json.
inline Json jsonBytes(std::string_view bytes) {
  return Json(textFromBytes(bytes));
}

// Members of an object, by type; nullopt when `obj` is not an object, the key is missing, or
// the value has another type (a negative or fractional number is not a uint).
const Json* jsonMember(const Json& obj, std::string_view key);
std::optional<uint64_t> jsonUint(const Json& obj, std::string_view key);
std::optional<int64_t> jsonInt(const Json& obj, std::string_view key);
std::optional<bool> jsonBool(const Json& obj, std::string_view key);
// A string member as it is written (text).
std::optional<std::string> jsonText(const Json& obj, std::string_view key);
// A byte string member: the text decoded with bytesFromText.
std::optional<std::string> jsonByteString(const Json& obj, std::string_view key);

// Reads the members of one record into fields: a missing key leaves the field as it is, a
// present key of the wrong type or out of the field's range is an error (the first is kept),
// unknown keys are not looked at.
//   JsonFields f(rec);
//   f.require("index").num("index", r.index).bytes("backing_file", r.backingFile);
//   if (!f.ok()) skip the record, f.error() says why
class JsonFields {
 public:
  explicit JsonFields(const Json& obj);
  JsonFields& require(std::string_view key);
  JsonFields& num(std::string_view key, int& out);
  JsonFields& num(std::string_view key, int64_t& out);
  JsonFields& num(std::string_view key, uint32_t& out);
  JsonFields& num(std::string_view key, uint64_t& out);
  JsonFields& flag(std::string_view key, bool& out);
  JsonFields& text(std::string_view key, std::string& out);   // as written
  JsonFields& bytes(std::string_view key, std::string& out);  // bytesFromText
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  template <class T>
  JsonFields& integer(std::string_view key, T& out);
  void fail(std::string_view key, const char* what);
  const Json& obj_;
  std::string error_;
};

}  // namespace cxiosync
