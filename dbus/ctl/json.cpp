#include "dbus/ctl/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cxiosync::ctl {

namespace {

void indent(std::string& out, int depth) {
  out += '\n';
  out.append(static_cast<size_t>(depth) * 2, ' ');
}

}  // namespace

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
