#include "policy/json_writer.h"

#include "policy/json.h"

namespace cxiosync {

std::string jsonEscape(std::string_view s) {
  return jsonQuote(s);
}

std::string utf8Sanitize(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8SequenceLength(s, i);
    if (n == 0) {
      o.push_back('?');
      ++i;
    } else {
      o.append(s.substr(i, n));
      i += n;
    }
  }
  return o;
}

void JsonWriter::newline() {
  if (!pretty_) return;
  out_.push_back('\n');
  out_.append(first_.size() * 2, ' ');
}

void JsonWriter::beforeValue() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_.push_back(',');
    first_.back() = false;
    newline();
  }
}

JsonWriter& JsonWriter::beginObject() {
  beforeValue();
  out_.push_back('{');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::endObject() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_.push_back('}');
  return *this;
}

JsonWriter& JsonWriter::beginArray() {
  beforeValue();
  out_.push_back('[');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::endArray() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_.push_back(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  beforeValue();
  out_ += jsonEscape(utf8Sanitize(k));
  out_ += pretty_ ? ": " : ":";
  afterKey_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view v) {
  beforeValue();
  out_ += jsonEscape(utf8Sanitize(v));
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t v) {
  beforeValue();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  beforeValue();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  beforeValue();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  beforeValue();
  out_ += "null";
  return *this;
}

}  // namespace cxiosync
