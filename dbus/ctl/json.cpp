#include "dbus/ctl/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cxiosync::ctl {

namespace {

// Length of a valid UTF-8 sequence starting at s[i], or 0.
size_t utf8Length(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  // Reject overlong forms, surrogates and values beyond U+10FFFF.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
  if (cp >= 0xd800 && cp <= 0xdfff) return 0;
  if (cp > 0x10ffff) return 0;
  return n;
}

void indent(std::string& out, int depth) {
  out += '\n';
  out.append(static_cast<size_t>(depth) * 2, ' ');
}

}  // namespace

std::string jsonQuote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    size_t n = utf8Length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out + "\"";
}

Json& Json::push(Json value) {
  std::get<Array>(v_).push_back(std::move(value));
  return *this;
}

Json& Json::set(std::string key, Json value) {
  auto& obj = std::get<Object>(v_);
  for (auto& [k, v] : obj) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  obj.emplace_back(std::move(key), std::move(value));
  return *this;
}

std::string Json::dump(bool pretty) const {
  std::string out;
  write(out, pretty, 0);
  return out;
}

void Json::write(std::string& out, bool pretty, int depth) const {
  switch (v_.index()) {
    case 0:
      out += "null";
      return;
    case 1:
      out += std::get<bool>(v_) ? "true" : "false";
      return;
    case 2:
      out += std::to_string(std::get<int64_t>(v_));
      return;
    case 3:
      out += std::to_string(std::get<uint64_t>(v_));
      return;
    case 4: {
      double d = std::get<double>(v_);
      if (!std::isfinite(d)) {
        out += "null";
        return;
      }
      // Shortest of %.15g / %.17g that reads back exactly (12.3, not 12.300000000000001).
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.15g", d);
      if (std::strtod(buf, nullptr) != d) std::snprintf(buf, sizeof buf, "%.17g", d);
      out += buf;
      return;
    }
    case 5:
      out += jsonQuote(std::get<std::string>(v_));
      return;
    case 6: {
      const auto& a = std::get<Array>(v_);
      if (a.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += ',';
        if (pretty) indent(out, depth + 1);
        a[i].write(out, pretty, depth + 1);
      }
      if (pretty) indent(out, depth);
      out += ']';
      return;
    }
    default: {
      const auto& o = std::get<Object>(v_);
      if (o.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < o.size(); ++i) {
        if (i) out += ',';
        if (pretty) indent(out, depth + 1);
        out += jsonQuote(o[i].first);
        out += pretty ? ": " : ":";
        o[i].second.write(out, pretty, depth + 1);
      }
      if (pretty) indent(out, depth);
      out += '}';
      return;
    }
  }
}

}  // namespace cxiosync::ctl
