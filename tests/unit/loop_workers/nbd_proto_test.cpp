// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "daemon/blockdev/nbd/nbd_device.h"
#include "daemon/blockdev/nbd/nbd_proto.h"

using namespace cxiosync::nbd;

TEST(NbdProto, RequestLayoutIsBigEndian) {
  Request r;
  r.type = static_cast<uint32_t>(Cmd::Write) | kCmdFlagFua;
  r.handle = {1, 2, 3, 4, 5, 6, 7, 8};
  r.from = 0x0102030405060708ull;
  r.len = 0x1000;
  unsigned char b[kRequestSize];
  encodeRequest(r, b);
  const unsigned char want[kRequestSize] = {0x25, 0x60, 0x95, 0x13, 0x00, 0x01, 0x00, 0x01, 1, 2,
                                            3,    4,    5,    6,    7,    8,    1,    2,    3, 4,
                                            5,    6,    7,    8,    0x00, 0x00, 0x10, 0x00};
  EXPECT_EQ(0, std::memcmp(b, want, kRequestSize));
  std::string why;
  auto d = decodeRequest(b, 0, &why);
  ASSERT_TRUE(d) << why;
  EXPECT_EQ(d->cmd(), Cmd::Write);
  EXPECT_EQ(d->flags(), kCmdFlagFua);
  EXPECT_EQ(d->from, r.from);
  EXPECT_EQ(d->len, 0x1000u);
  EXPECT_EQ(d->handle, r.handle);
}

TEST(NbdProto, ReplyRoundTrip) {
  Reply r{5, {9, 8, 7, 6, 5, 4, 3, 2}};
  unsigned char b[kReplySize];
  encodeReply(r, b);
  EXPECT_EQ(b[0], 0x67);
  EXPECT_EQ(b[3], 0x98);
  EXPECT_EQ(b[7], 5);
  auto d = decodeReply(b, nullptr);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->error, 5u);
  EXPECT_EQ(d->handle, r.handle);
  b[0] = 0;
  std::string why;
  EXPECT_FALSE(decodeReply(b, &why));
  EXPECT_EQ(why, "bad reply magic");
}

TEST(NbdProto, DecodeRejectsWhatAServerMustNotTrust) {
  unsigned char b[kRequestSize];
  std::string why;
  Request r;
  r.type = static_cast<uint32_t>(Cmd::Read);
  r.from = 4096;
  r.len = 4096;
  encodeRequest(r, b);
  EXPECT_TRUE(decodeRequest(b, 8192, &why));
  EXPECT_FALSE(decodeRequest(b, 4096, &why));  // beyond the end
  EXPECT_NE(why.find("beyond the end"), std::string::npos);
  r.len = kMaxRequestBytes + 1;
  encodeRequest(r, b);
  EXPECT_FALSE(decodeRequest(b, 0, &why));
  r.from = ~0ull - 10;
  r.len = 4096;
  encodeRequest(r, b);
  EXPECT_FALSE(decodeRequest(b, 0, &why));
  EXPECT_NE(why.find("wraps"), std::string::npos);
  r = Request{};
  r.type = 99;
  encodeRequest(r, b);
  EXPECT_FALSE(decodeRequest(b, 0, &why));
  EXPECT_NE(why.find("unknown command"), std::string::npos);
  encodeRequest(Request{}, b);
  b[0] ^= 1;
  EXPECT_FALSE(decodeRequest(b, 0, &why));
  EXPECT_EQ(why, "bad request magic");
  // Flush and disconnect carry no range.
  r = Request{};
  r.type = static_cast<uint32_t>(Cmd::Flush);
  r.from = ~0ull;
  r.len = ~0u;
  encodeRequest(r, b);
  EXPECT_TRUE(decodeRequest(b, 4096, &why));
}

TEST(NbdProto, ErrorsMapToNbdErrnos) {
  EXPECT_EQ(toNbdError(0), 0u);
  EXPECT_EQ(toNbdError(ENOSPC), static_cast<uint32_t>(ENOSPC));
  EXPECT_EQ(toNbdError(EPERM), static_cast<uint32_t>(EPERM));
  EXPECT_EQ(toNbdError(EBADF), static_cast<uint32_t>(EIO));
}

TEST(NbdDevice, ReadyLineRoundTrip) {
  SpawnResult r;
  r.index = 3;
  r.pid = 1234;
  r.directIo = true;
  r.ioFlusherThreads = 8;
  r.connections = 4;
  r.blockSize = 4096;
  r.sizeBytes = 1 << 26;
  auto p = parseReady(formatReady(r));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->index, 3);
  EXPECT_EQ(p->pid, 1234);
  EXPECT_TRUE(p->directIo);
  EXPECT_EQ(p->ioFlusherThreads, 8);
  EXPECT_EQ(p->connections, 4);
  EXPECT_EQ(p->device, "/dev/nbd3");
  EXPECT_EQ(p->sizeBytes, uint64_t{1} << 26);
  EXPECT_FALSE(parseReady("error 16 busy"));
  EXPECT_FALSE(parseReady("ready index=1"));
  EXPECT_FALSE(parseReady("ready index=x pid=2"));
  EXPECT_FALSE(parseReady("ready index=1 pid=0"));
}

TEST(NbdDevice, FreeMeansNoServerAndNoSize) {
  DeviceState s;
  EXPECT_TRUE(isFree(s));
  s.connected = true;
  EXPECT_FALSE(isFree(s));
  s.connected = false;
  s.sizeBytes = 512;
  EXPECT_FALSE(isFree(s));
}
