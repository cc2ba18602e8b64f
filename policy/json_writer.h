#pragma once
// A small JSON writer for the loop state file and cxiosync-loop --json. (Reading goes through
// yaml-cpp, which parses JSON.) Strings are escaped per RFC 8259 (policy/json.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cxiosync {

class JsonWriter {
 public:
  explicit JsonWriter(bool pretty = true) : pretty_(pretty) {}
  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(const std::string& v) { return value(std::string_view(v)); }
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint32_t v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& null();
  const std::string& str() const { return out_; }

 private:
  void beforeValue();
  void newline();
  bool pretty_;
  std::string out_;
  std::vector<bool> first_;  // per open container: no element yet
  bool afterKey_ = false;
};

// With the surrounding quotes: policy/json.h jsonQuote (invalid UTF-8 bytes become U+FFFD;
// the writer below passes strings through utf8Sanitize first, so they become '?').
std::string jsonEscape(std::string_view s);

// Replaces every byte that is not part of valid UTF-8 with '?' (file names are bytes; JSON
// readers want UTF-8). For display fields only: identity is never kept in such a string.
std::string utf8Sanitize(std::string_view s);

}  // namespace cxiosync
