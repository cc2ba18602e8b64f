// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/nbd/nbd_server.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

namespace cxiosync::nbd {

bool setIoFlusher() {
  return ::prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) == 0;
}

int readFull(int fd, void* buf, size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::read(fd, p + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) return -1;
    done += static_cast<size_t>(r);
  }
  return 0;
}

namespace {

int writevFull(int fd, struct iovec* iov, int cnt) {
  while (cnt > 0) {
    struct msghdr mh {};
    mh.msg_iov = iov;
    mh.msg_iovlen = static_cast<size_t>(cnt);
    ssize_t r = ::sendmsg(fd, &mh, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    auto left = static_cast<size_t>(r);
    while (cnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --cnt;
    }
    if (cnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return 0;
}

unsigned char* allocAligned(size_t len, size_t align) {
  size_t sz = (len + align - 1) / align * align;
  if (sz == 0) sz = align;
  return static_cast<unsigned char*>(std::aligned_alloc(align, sz));
}

}  // namespace

Server::Server(ServeOptions o, std::vector<UniqueFd> sockets) : o_(o), socks_(std::move(sockets)) {
  if (o_.workers < 1) o_.workers = 1;
  if (o_.dioAlign == 0) o_.dioAlign = 4096;
  for (size_t i = 0; i < socks_.size(); ++i) sendMu_.push_back(std::make_unique<std::mutex>());
}

Server::~Server() {
  stop();
}

void Server::fail(const std::string& why) {
  std::lock_guard<std::mutex> l(errMu_);
  lastError_ = why;
}

void Server::start() {
  liveReceivers_ = static_cast<int>(socks_.size());
  for (int i = 0; i < o_.workers; ++i) workers_.emplace_back([this] { work(); });
  for (size_t c = 0; c < socks_.size(); ++c) receivers_.emplace_back([this, c] { receive(c); });
}

void Server::receive(size_t conn) {
  if (setIoFlusher())
    ++stats_.ioFlusherThreads;
  else
    ++stats_.ioFlusherFailures;
  const int fd = socks_[conn].get();
  while (true) {
    unsigned char hdr[kRequestSize];
    int r = readFull(fd, hdr, sizeof hdr);
    if (r != 0) {
      if (r > 0) fail(std::string("connection ") + std::to_string(conn) + ": " + std::strerror(r));
      break;
    }
    std::string why;
    auto req = decodeRequest(hdr, o_.exportSize, &why);
    if (!req) {
      fail("connection " + std::to_string(conn) + ": " + why);
      break;
    }
    if (req->cmd() == Cmd::Disc) break;
    Job j{conn, *req, nullptr};
    if (req->cmd() == Cmd::Write) {
      j.data = allocAligned(req->len, 4096);
      if (!j.data || readFull(fd, j.data, req->len) != 0) {
        std::free(j.data);
        fail("connection " + std::to_string(conn) + ": short write payload");
        break;
      }
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      queue_.push_back(j);
    }
    cv_.notify_one();
  }
  // A protocol error or EOF: this connection is over. Shutting it down tells the kernel
  // (it marks the connection dead and fails over or errors the requests on it).
  ::shutdown(fd, SHUT_RDWR);
  if (--liveReceivers_ == 0) {
    std::lock_guard<std::mutex> l(mu_);
    closing_ = true;
    cv_.notify_all();
  }
}

void Server::work() {
  if (setIoFlusher())
    ++stats_.ioFlusherThreads;
  else
    ++stats_.ioFlusherFailures;
  while (true) {
    Job j;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing and drained
      j = queue_.front();
      queue_.pop_front();
    }
    int now = ++inFlight_;
    int prev = stats_.maxInFlight.load();
    while (now > prev && !stats_.maxInFlight.compare_exchange_weak(prev, now)) {
    }
    if (o_.beforeIo) o_.beforeIo();
    serve(j);
    --inFlight_;
    std::free(j.data);
  }
}

int Server::doRead(uint64_t off, unsigned char* buf, uint32_t len) {
  const bool aligned = o_.directFd >= 0 && off % o_.dioAlign == 0 && len % o_.dioAlign == 0;
  int fd = aligned ? o_.directFd : o_.bufferedFd;
  uint32_t done = 0;
  while (done < len) {
    ssize_t r = ::pread(fd, buf + done, len - done, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && fd == o_.directFd) {  // alignment the file did not accept
        fd = o_.bufferedFd;
        continue;
      }
      return errno;
    }
    if (r == 0) {  // past the end of a file that shrank: zeros, as a hole reads
      std::memset(buf + done, 0, len - done);
      break;
    }
    done += static_cast<uint32_t>(r);
  }
  ++(fd == o_.directFd ? stats_.directIos : stats_.bufferedIos);
  return 0;
}

int Server::doWrite(uint64_t off, const unsigned char* buf, uint32_t len) {
  const bool aligned = o_.directFd >= 0 && off % o_.dioAlign == 0 && len % o_.dioAlign == 0;
  int fd = aligned ? o_.directFd : o_.bufferedFd;
  uint32_t done = 0;
  while (done < len) {
    ssize_t r = ::pwrite(fd, buf + done, len - done, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && fd == o_.directFd) {
        fd = o_.bufferedFd;
        continue;
      }
      return errno;
    }
    done += static_cast<uint32_t>(r);
  }
  ++(fd == o_.directFd ? stats_.directIos : stats_.bufferedIos);
  return 0;
}

void Server::serve(Job& j) {
  const Request& q = j.req;
  int err = 0;
  unsigned char* out = nullptr;
  uint32_t outLen = 0;
  switch (q.cmd()) {
    case Cmd::Read:
      ++stats_.reads;
      out = allocAligned(q.len, 4096);
      if (!out) {
        err = ENOMEM;
        break;
      }
      err = doRead(q.from, out, q.len);
      if (err == 0) outLen = q.len;
      break;
    case Cmd::Write:
      ++stats_.writes;
      if (o_.readOnly) {
        err = EPERM;
        break;
      }
      err = doWrite(q.from, j.data, q.len);
      if (err == 0 && (q.flags() & kCmdFlagFua) && ::fdatasync(o_.bufferedFd) != 0) err = errno;
      break;
    case Cmd::Flush:
      ++stats_.flushes;
      if (::fdatasync(o_.bufferedFd) != 0) err = errno;
      break;
    case Cmd::Trim:
      ++stats_.trims;
      if (o_.readOnly) {
        err = EPERM;
        break;
      }
      // Advisory: a filesystem that cannot punch holes just keeps the data.
      if (::fallocate(o_.bufferedFd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(q.from), static_cast<off_t>(q.len)) != 0 &&
          errno != EOPNOTSUPP)
        err = errno;
      break;
    default:
      err = EINVAL;
  }
  if (err) ++stats_.errors;
  reply(j.conn, q, err, out, outLen);
  std::free(out);
}

void Server::reply(size_t conn, const Request& req, int err, const unsigned char* data,
                   uint32_t len) {
  unsigned char hdr[kReplySize];
  encodeReply(Reply{toNbdError(err), req.handle}, hdr);
  struct iovec iov[2];
  iov[0].iov_base = hdr;
  iov[0].iov_len = sizeof hdr;
  int cnt = 1;
  if (data && len) {
    iov[1].iov_base = const_cast<unsigned char*>(data);
    iov[1].iov_len = len;
    cnt = 2;
  }
  std::lock_guard<std::mutex> l(*sendMu_[conn]);
  if (int e = writevFull(socks_[conn].get(), iov, cnt); e != 0 && e != EPIPE)
    fail("reply on connection " + std::to_string(conn) + ": " + std::strerror(e));
}

void Server::stop() {
  for (auto& s : socks_)
    if (s.valid()) ::shutdown(s.get(), SHUT_RDWR);
  join();
}

void Server::join() {
  if (joined_) return;
  for (auto& t : receivers_)
    if (t.joinable()) t.join();
  {
    std::lock_guard<std::mutex> l(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  joined_ = !receivers_.empty() || !workers_.empty();
}

}  // namespace cxiosync::nbd
