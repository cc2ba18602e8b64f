#pragma once
// JSON strings, written one way for every layer (the CLI's --json, the daemon's journal and
// observe output, the loop state file): RFC 8259 escapes for '"', '\\', \n, \t, \r; every
// other control byte and DEL as \u00XX (lower-case hex); everything else as it is.
//
// Bytes that are not UTF-8 (cgroup and file names are bytes):
//   JsonBytes::Utf8 (default): each invalid byte becomes \ufffd, so the text is valid JSON
//     for any reader. For output that people and other programs read.
//   JsonBytes::Raw: bytes >= 0x80 pass through unchanged, valid UTF-8 or not. Only for files
//     that our own parser reads back and where the exact bytes are identity (the boost
//     journal names cgroups by path: a replacement character would lose the cgroup).
#include <cstddef>
#include <string>
#include <string_view>

#include "policy/bytes_text.h"

namespace cxiosync {

enum class JsonBytes { Utf8, Raw };

// Appends `s` as a JSON string, with the surrounding quotes.
void appendJsonString(std::string& out, std::string_view s, JsonBytes bytes = JsonBytes::Utf8);

// `s` as a JSON string, with the surrounding quotes.
std::string jsonQuote(std::string_view s, JsonBytes bytes = JsonBytes::Utf8);

}  // namespace cxiosync
