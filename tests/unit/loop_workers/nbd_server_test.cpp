// SPDX-License-Identifier: GPL-2.0-or-later
// The userspace NBD server driven the way the kernel drives it: requests on connected
// sockets, replies matched by handle. No kernel nbd device needed.
#include "daemon/blockdev/nbd/nbd_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using namespace cxiosync;
using namespace cxiosync::nbd;

namespace {

struct Client {
  int fd;
  uint64_t next = 1;
  std::array<unsigned char, 8> handle(uint64_t h) {
    std::array<unsigned char, 8> a{};
    std::memcpy(a.data(), &h, 8);
    return a;
  }
  void send(Cmd c, uint64_t from, uint32_t len, const std::vector<unsigned char>* data = nullptr,
            uint64_t h = 0) {
    Request r;
    r.type = static_cast<uint32_t>(c);
    r.handle = handle(h ? h : next++);
    r.from = from;
    r.len = len;
    unsigned char b[kRequestSize];
    encodeRequest(r, b);
    ASSERT_EQ(::write(fd, b, sizeof b), static_cast<ssize_t>(sizeof b));
    if (data) {
      ASSERT_EQ(::write(fd, data->data(), data->size()), static_cast<ssize_t>(data->size()));
    }
  }
  Reply recvReply(std::vector<unsigned char>* data = nullptr, uint32_t len = 0) {
    unsigned char b[kReplySize];
    EXPECT_EQ(readFull(fd, b, sizeof b), 0);
    auto r = decodeReply(b, nullptr);
    EXPECT_TRUE(r);
    if (data && r && r->error == 0) {
      data->resize(len);
      EXPECT_EQ(readFull(fd, data->data(), len), 0);
    }
    return r.value_or(Reply{});
  }
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/cxnbd.XXXXXX";
    int fd = ::mkstemp(t);
    ASSERT_GE(fd, 0);
    path_ = t;
    file_.reset(fd);
    ASSERT_EQ(::ftruncate(fd, kSize), 0);
  }
  void TearDown() override { ::unlink(path_.c_str()); }
  std::unique_ptr<Server> start(int workers, int conns, bool ro = false) {
    std::vector<UniqueFd> srv;
    clients_.clear();
    for (int i = 0; i < conns; ++i) {
      int sp[2];
      EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
      srv.emplace_back(sp[0]);
      clients_.emplace_back(sp[1]);
    }
    ServeOptions o;
    o.bufferedFd = file_.get();
    o.exportSize = kSize;
    o.workers = workers;
    o.readOnly = ro;
    auto s = std::make_unique<Server>(o, std::move(srv));
    s->start();
    return s;
  }
  static constexpr off_t kSize = 1 << 20;
  std::string path_;
  UniqueFd file_;
  std::vector<UniqueFd> clients_;
};

}  // namespace

TEST_F(ServerTest, WriteReadFlushTrimOnEveryConnection) {
  auto s = start(2, 3);
  std::mt19937 rng(7);
  for (size_t c = 0; c < clients_.size(); ++c) {
    Client cl{clients_[c].get()};
    std::vector<unsigned char> data(8192);
    for (auto& b : data) b = static_cast<unsigned char>(rng());
    const uint64_t off = 65536 * (c + 1);
    cl.send(Cmd::Write, off, 8192, &data);
    EXPECT_EQ(cl.recvReply().error, 0u);
    cl.send(Cmd::Flush, 0, 0);
    EXPECT_EQ(cl.recvReply().error, 0u);
    cl.send(Cmd::Read, off, 8192);
    std::vector<unsigned char> back;
    EXPECT_EQ(cl.recvReply(&back, 8192).error, 0u);
    EXPECT_EQ(back, data);
    // What the file holds too (the backing I/O really happened).
    std::vector<unsigned char> disk(8192);
    ASSERT_EQ(::pread(file_.get(), disk.data(), 8192, static_cast<off_t>(off)), 8192);
    EXPECT_EQ(disk, data);
    cl.send(Cmd::Trim, off, 4096);
    EXPECT_EQ(cl.recvReply().error, 0u);
    cl.send(Cmd::Read, off, 4096);
    EXPECT_EQ(cl.recvReply(&back, 4096).error, 0u);
    EXPECT_EQ(back, std::vector<unsigned char>(4096, 0));  // punched hole reads zeros
  }
  EXPECT_GE(s->stats().flushes.load(), 3u);
  s->stop();
}

TEST_F(ServerTest, ReadOnlyRefusesWritesWithEperm) {
  auto s = start(1, 1, true);
  Client cl{clients_[0].get()};
  std::vector<unsigned char> data(4096, 1);
  cl.send(Cmd::Write, 0, 4096, &data);
  EXPECT_EQ(cl.recvReply().error, static_cast<uint32_t>(EPERM));
  cl.send(Cmd::Trim, 0, 4096);
  EXPECT_EQ(cl.recvReply().error, static_cast<uint32_t>(EPERM));
  s->stop();
}

TEST_F(ServerTest, ProtocolErrorClosesTheConnection) {
  auto s = start(1, 1);
  unsigned char junk[kRequestSize] = {1, 2, 3};
  ASSERT_EQ(::write(clients_[0].get(), junk, sizeof junk), static_cast<ssize_t>(sizeof junk));
  unsigned char b;
  EXPECT_EQ(::read(clients_[0].get(), &b, 1), 0);  // EOF: the server shut it down
  s->join();
  EXPECT_TRUE(s->receiversDone());
  EXPECT_NE(s->lastError().find("magic"), std::string::npos);
}

TEST_F(ServerTest, DisconnectEndsTheReceiver) {
  auto s = start(2, 2);
  for (auto& c : clients_) {
    Client cl{c.get()};
    cl.send(Cmd::Disc, 0, 0);
  }
  s->join();
  EXPECT_TRUE(s->receiversDone());
}

// The point of workers: N backing I/Os in flight at once. Each worker waits before its I/O
// until `workers` of them are waiting together (or 5 s pass): with N workers and enough
// queued requests, N must meet; and never more than N run at once.
TEST(ServerConcurrency, WorkersAreTheBackingIosInFlight) {
  for (int workers : {1, 2, 4}) {
    char t[] = "/tmp/cxnbdc.XXXXXX";
    int fd = ::mkstemp(t);
    ASSERT_EQ(::ftruncate(fd, 1 << 22), 0);
    std::vector<UniqueFd> srv, cli;
    for (int i = 0; i < workers; ++i) {
      int sp[2];
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
      srv.emplace_back(sp[0]);
      cli.emplace_back(sp[1]);
    }
    std::mutex mu;
    std::condition_variable cv;
    int waiting = 0, met = 0;
    ServeOptions o;
    o.bufferedFd = fd;
    o.exportSize = 1 << 22;
    o.workers = workers;
    o.beforeIo = [&] {
      std::unique_lock<std::mutex> l(mu);
      if (++waiting >= workers) {
        ++met;
        waiting = 0;
        cv.notify_all();
        return;
      }
      const int round = met;
      cv.wait_for(l, std::chrono::seconds(5), [&] { return met != round; });
    };
    Server s(o, std::move(srv));
    s.start();
    // 8*workers reads queued at once on connection 0 (the kernel pipelines requests on a
    // connection the same way).
    Client cl{cli[0].get()};
    const int n = 8 * workers;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) cl.send(Cmd::Read, static_cast<uint64_t>(i) * 65536, 65536);
    std::vector<unsigned char> d;
    for (int i = 0; i < n; ++i) EXPECT_EQ(cl.recvReply(&d, 65536).error, 0u);
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(s.stats().maxInFlight.load(), workers);
    EXPECT_EQ(met, 8) << workers << " workers never all waited together";
    EXPECT_LT(took, std::chrono::seconds(5));
    EXPECT_EQ(s.stats().reads.load(), static_cast<uint64_t>(n));
    s.stop();
    ::close(fd);
    ::unlink(t);
  }
}
