// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Kernel names are bytes; everything cxiosync writes for people and programs (D-Bus strings,
// JSON, metrics labels, logs) is UTF-8. This is the ONE reversible mapping between them,
// used by every writer and accepted by every input that names a cgroup:
//
//   - valid UTF-8 passes through unchanged (systemd's own escapes such as
//     "system-systemd\x2dfsck.slice" are plain text in a cgroup name and stay as they are);
//   - each byte that is not part of valid UTF-8 becomes \xNN (lower-case hex; always >= 0x80,
//     since ASCII is always valid), as systemd's cescape writes it;
//   - a literal backslash that would otherwise read as such an escape ("\x" followed by
//     two hex digits >= 0x80, or "5c") becomes \x5c.
//
// Decoding turns \xNN into byte NN only where NN >= 0x80 or NN == 0x5c (either case); any
// other backslash is literal. So bytesFromText(textFromBytes(b)) == b for every b, and text
// that never contained such a sequence decodes to itself.
#include <string>
#include <string_view>

namespace cxiosync {

std::string textFromBytes(std::string_view bytes);
std::string bytesFromText(std::string_view text);

// Length (1 to 4) of the valid UTF-8 sequence that starts at s[i], or 0 when none does
// (a stray continuation byte, a truncated or overlong sequence, a surrogate, > U+10FFFF).
// Requires i < s.size().
size_t utf8SequenceLength(std::string_view s, size_t i);

// At most maxBytes bytes of valid UTF-8 `s`, never cutting a character in two.
std::string_view utf8Prefix(std::string_view s, size_t maxBytes);

}  // namespace cxiosync
