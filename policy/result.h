// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Errors are values: an errno (0 when not a system error) plus a message a person can act on.
// g++ 12 has no std::expected, so this is the small subset we need.
#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace cxiosync {

struct Error {
  int code = 0;  // errno, or 0 for a parse/validation error
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Error> v_;
};

// Result of an operation with no value.
struct Ok {};
using Status = Result<Ok>;

inline Error makeError(std::string message, int code = 0) {
  return Error{code, std::move(message)};
}

}  // namespace cxiosync
