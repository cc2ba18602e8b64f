// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Shared helpers for the libFuzzer targets: turn the fuzzer's bytes into a string_view and
// abort (a crash libFuzzer reports) when a parser breaks one of its documented invariants.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "policy/result.h"

namespace cxiosync::fuzz {

inline std::string_view asText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

// Every error must carry a non-empty message and no errno (parse errors are code 0).
template <class T>
void checkResult(const Result<T>& r) {
  if (!r.ok()) {
    FUZZ_CHECK(!r.error().message.empty());
    FUZZ_CHECK(r.error().code == 0);
  }
}

}  // namespace cxiosync::fuzz
