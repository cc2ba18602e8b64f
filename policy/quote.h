#pragma once
// Quoting for error messages: hostile input (control bytes, huge values) stays printable and
// bounded, e.g. 'a\x0ab...' — shared by every layer that echoes user input back.
#include <string>
#include <string_view>

namespace cxiosync {

// 'TEXT' with control bytes as \xNN and at most 64 bytes shown ("..." when cut).
std::string quoteForMessage(std::string_view text);

}  // namespace cxiosync
