// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/psi.h"

#include <charconv>

#include "policy/formats/text_util.h"

namespace cxiosync {

namespace {
constexpr std::string_view kWhat = "pressure";

// "12.34" or "12": digits with an optional fraction. No sign, exponent, inf or nan.
std::optional<double> parseAvg(std::string_view s) {
  auto dot = s.find('.');
  if (dot == std::string_view::npos) {
    if (!detail::isDigits(s)) return std::nullopt;
  } else if (!detail::isDigits(s.substr(0, dot)) || !detail::isDigits(s.substr(dot + 1))) {
    return std::nullopt;
  }
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

Result<PsiLine> parseLine(std::string_view rest, size_t n) {
  PsiLine out;
  bool have10 = false, have60 = false, have300 = false, haveTotal = false;
  std::string_view field;
  while (detail::nextField(rest, field)) {
    auto eq = field.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return detail::lineError(kWhat, n, "expected key=value", field);
    }
    std::string_view key = field.substr(0, eq);
    std::string_view val = field.substr(eq + 1);
    double* avg = nullptr;
    bool* have = nullptr;
    if (key == "avg10") {
      avg = &out.avg10;
      have = &have10;
    } else if (key == "avg60") {
      avg = &out.avg60;
      have = &have60;
    } else if (key == "avg300") {
      avg = &out.avg300;
      have = &have300;
    } else if (key == "total") {
      have = &haveTotal;
    } else {
      continue;  // unknown key: ignored
    }
    if (*have) return detail::lineError(kWhat, n, "duplicate key", key);
    *have = true;
    if (avg != nullptr) {
      auto v = parseAvg(val);
      if (!v) {
        return detail::lineError(kWhat, n, "invalid value for '" + std::string(key) + "'", val);
      }
      *avg = *v;
    } else {
      auto v = detail::parseU64(val);
      if (!v) {
        return detail::lineError(
            kWhat, n, "invalid value for 'total' (expected an unsigned 64-bit number)", val);
      }
      out.totalUsec = *v;
    }
  }
  if (!have10 || !have60 || !have300 || !haveTotal) {
    std::string missing;
    for (auto [k, h] : {std::pair<const char*, bool>{"avg10", have10},
                        {"avg60", have60},
                        {"avg300", have300},
                        {"total", haveTotal}}) {
      if (!h) {
        if (!missing.empty()) missing += ", ";
        missing += k;
      }
    }
    return detail::lineError(kWhat, n, "missing key(s): " + missing);
  }
  return out;
}
}  // namespace

Result<Psi> parsePsi(std::string_view text) {
  if (auto e = detail::checkNoNul(kWhat, text)) return *e;
  std::optional<PsiLine> some;
  std::optional<PsiLine> full;
  detail::LineReader reader(text);
  std::string_view line;
  while (reader.next(line)) {
    const size_t n = reader.lineNo();
    std::string_view rest = line;
    std::string_view kind;
    if (!detail::nextField(rest, kind)) continue;  // blank line
    std::optional<PsiLine>* slot = nullptr;
    if (kind == "some") {
      slot = &some;
    } else if (kind == "full") {
      slot = &full;
    } else {
      return detail::lineError(kWhat, n, "expected 'some' or 'full'", kind);
    }
    if (slot->has_value()) {
      return detail::lineError(kWhat, n, "duplicate '" + std::string(kind) + "' line");
    }
    auto parsed = parseLine(rest, n);
    if (!parsed) return parsed.error();
    *slot = *parsed;
  }
  if (!some) return makeError(std::string(kWhat) + ": no 'some' line");
  return Psi{*some, full};
}

}  // namespace cxiosync
