// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/nbd/nbd_proto.h"

#include <cerrno>
#include <cstring>

namespace cxiosync::nbd {

namespace {

void put32(unsigned char* p, uint32_t v) {
  p[0] = static_cast<unsigned char>(v >> 24);
  p[1] = static_cast<unsigned char>(v >> 16);
  p[2] = static_cast<unsigned char>(v >> 8);
  p[3] = static_cast<unsigned char>(v);
}
void put64(unsigned char* p, uint64_t v) {
  put32(p, static_cast<uint32_t>(v >> 32));
  put32(p + 4, static_cast<uint32_t>(v));
}
uint32_t get32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint64_t get64(const unsigned char* p) {
  return (uint64_t{get32(p)} << 32) | get32(p + 4);
}

}  // namespace

void encodeRequest(const Request& r, unsigned char out[kRequestSize]) {
  put32(out, kRequestMagic);
  put32(out + 4, r.type);
  std::memcpy(out + 8, r.handle.data(), 8);
  put64(out + 16, r.from);
  put32(out + 24, r.len);
}

void encodeReply(const Reply& r, unsigned char out[kReplySize]) {
  put32(out, kReplyMagic);
  put32(out + 4, r.error);
  std::memcpy(out + 8, r.handle.data(), 8);
}

std::optional<Request> decodeRequest(const unsigned char in[kRequestSize], uint64_t exportSize,
                                     std::string* why) {
  auto bad = [&](std::string s) -> std::optional<Request> {
    if (why) *why = std::move(s);
    return std::nullopt;
  };
  if (get32(in) != kRequestMagic) return bad("bad request magic");
  Request r;
  r.type = get32(in + 4);
  std::memcpy(r.handle.data(), in + 8, 8);
  r.from = get64(in + 16);
  r.len = get32(in + 24);
  switch (r.cmd()) {
    case Cmd::Read:
    case Cmd::Write:
    case Cmd::Trim:
    case Cmd::WriteZeroes:
      if (r.len > kMaxRequestBytes && r.cmd() != Cmd::Trim)
        return bad("request length " + std::to_string(r.len) + " exceeds the maximum");
      if (r.from + r.len < r.from) return bad("request range wraps around");
      if (exportSize != 0 && r.from + r.len > exportSize)
        return bad("request beyond the end of the export (" + std::to_string(r.from) + "+" +
                   std::to_string(r.len) + " > " + std::to_string(exportSize) + ")");
      break;
    case Cmd::Disc:
    case Cmd::Flush:
      break;
    default:
      return bad("unknown command " + std::to_string(r.type & 0xffff));
  }
  return r;
}

std::optional<Reply> decodeReply(const unsigned char in[kReplySize], std::string* why) {
  if (get32(in) != kReplyMagic) {
    if (why) *why = "bad reply magic";
    return std::nullopt;
  }
  Reply r;
  r.error = get32(in + 4);
  std::memcpy(r.handle.data(), in + 8, 8);
  return r;
}

const char* cmdName(Cmd c) {
  switch (c) {
    case Cmd::Read:
      return "read";
    case Cmd::Write:
      return "write";
    case Cmd::Disc:
      return "disconnect";
    case Cmd::Flush:
      return "flush";
    case Cmd::Trim:
      return "trim";
    case Cmd::WriteZeroes:
      return "write-zeroes";
  }
  return "unknown";
}

uint32_t toNbdError(int err) {
  switch (err) {
    case 0:
      return 0;
    case EPERM:
    case EIO:
    case ENOMEM:
    case EINVAL:
    case ENOSPC:
    case EOVERFLOW:
    case ENOTSUP:
    case ESHUTDOWN:
      return static_cast<uint32_t>(err);
    default:
      return EIO;
  }
}

}  // namespace cxiosync::nbd
