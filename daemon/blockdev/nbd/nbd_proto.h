// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The NBD transmission protocol as the Linux nbd driver speaks it over a socket set with
// NBD_SET_SOCK (no handshake: the kernel is told size and flags by ioctl).
//
//   request (28 bytes, big-endian): magic 0x25609513, type (low 16 bits: command, high 16
//           bits: command flags such as FUA), handle (8 opaque bytes), from (u64), len (u32);
//           a WRITE is followed by len bytes of data.
//   reply   (16 bytes): magic 0x67446698, error (an errno value, 0 = ok), handle; a
//           successful READ is followed by len bytes of data.
// Pure encoding/decoding, no I/O: unit-tested in tests/unit/loop_workers.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace cxiosync::nbd {

inline constexpr uint32_t kRequestMagic = 0x25609513;
inline constexpr uint32_t kReplyMagic = 0x67446698;
inline constexpr size_t kRequestSize = 28;
inline constexpr size_t kReplySize = 16;

enum class Cmd : uint16_t { Read = 0, Write = 1, Disc = 2, Flush = 3, Trim = 4, WriteZeroes = 6 };
inline constexpr uint32_t kCmdFlagFua = 1u << 16;

// Transmission flags (NBD_SET_FLAGS).
inline constexpr uint32_t kFlagHasFlags = 1u << 0;
inline constexpr uint32_t kFlagReadOnly = 1u << 1;
inline constexpr uint32_t kFlagSendFlush = 1u << 2;
inline constexpr uint32_t kFlagSendFua = 1u << 3;
inline constexpr uint32_t kFlagSendTrim = 1u << 5;
inline constexpr uint32_t kFlagCanMultiConn = 1u << 8;

// The largest request the kernel sends us is bounded by the queue's max_sectors; anything
// above this is a protocol error (a corrupt stream), not a request to serve.
inline constexpr uint32_t kMaxRequestBytes = 32u << 20;

struct Request {
  uint32_t type = 0;  // raw: command | flags
  std::array<unsigned char, 8> handle{};
  uint64_t from = 0;
  uint32_t len = 0;
  Cmd cmd() const { return static_cast<Cmd>(type & 0xffff); }
  uint32_t flags() const { return type & 0xffff0000u; }
};

struct Reply {
  uint32_t error = 0;
  std::array<unsigned char, 8> handle{};
};

void encodeRequest(const Request& r, unsigned char out[kRequestSize]);
void encodeReply(const Reply& r, unsigned char out[kReplySize]);

// Decoding validates what a server must not trust: the magic, a known command, a length
// within kMaxRequestBytes for data commands, and from+len not wrapping or beyond `exportSize`
// (0 = unchecked). On failure returns nullopt and says why in *why.
std::optional<Request> decodeRequest(const unsigned char in[kRequestSize], uint64_t exportSize,
                                     std::string* why);
std::optional<Reply> decodeReply(const unsigned char in[kReplySize], std::string* why);

const char* cmdName(Cmd c);

// The NBD error numbers are Linux errno values for the ones the kernel maps (EIO, EPERM,
// ENOSPC, EINVAL...); anything else becomes EIO.
uint32_t toNbdError(int err);

}  // namespace cxiosync::nbd
