// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Quoting for error messages: hostile input (control bytes, huge values) stays printable and
// bounded, e.g. 'a\x0ab...' — shared by every layer that echoes user input back.
#include <string>
#include <string_view>

namespace cxiosync {

// 'TEXT' with control bytes as \x0a-style escapes and at most 64 bytes of TEXT shown ("..."
// when cut). The cut never splits a UTF-8 character: a message cut inside one is not valid
// UTF-8, and sd-bus then drops the whole error reply (the caller waited 25 s; issue 16).
// Bytes that are not UTF-8 stay bytes here: the message is daemon bytes like any other, and
// the boundary turns it into text once (textFromBytes, policy/bytes_text.h).
std::string quoteForMessage(std::string_view text);

}  // namespace cxiosync
