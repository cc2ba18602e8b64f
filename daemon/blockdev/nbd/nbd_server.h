// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The userspace half of an NBD-backed block device: serves the kernel nbd driver's requests
// on N connected sockets (one per NBD connection, multi-connection mode) with a pool of
// `workers` I/O threads doing pread/pwrite/fdatasync/fallocate on the backing file.
//
//   per connection: one receiver thread reads requests (and WRITE payloads) and queues them;
//   the pool:       `workers` threads take requests from the shared queue, do the backing
//                   I/O and send the reply on the request's own connection (a mutex per
//                   connection keeps replies whole; replies may come out of order: the
//                   handle pairs them).
// So `workers` is exactly the number of backing I/Os in flight at once, whatever CPU the
// kernel queued a request on (nbd maps its hardware queues = connections to CPUs, so with
// one thread per socket a 2-CPU machine would only ever use 2 of them).
//
// Every thread sets PR_SET_IO_FLUSHER (Linux 5.6+, needs CAP_SYS_RESOURCE): it serves block
// I/O, so it must neither recurse into filesystem reclaim nor be dirty-throttled against the
// device it is cleaning (the userspace form of the 2017 loop PF_LESS_THROTTLE fix).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/blockdev/nbd/nbd_proto.h"
#include "daemon/kernel/fs.h"

namespace cxiosync::nbd {

inline constexpr int kMaxWorkers = 16;

struct ServeOptions {
  int bufferedFd = -1;    // the backing file as the caller opened it
  int directFd = -1;      // the same file opened O_DIRECT, or -1 (buffered only)
  uint32_t dioAlign = 0;  // offset/length/memory alignment for directFd (0: 4096)
  uint64_t exportSize = 0;
  bool readOnly = false;
  int workers = 1;
  // Tests: called by a worker right before each backing I/O (e.g. a barrier).
  std::function<void()> beforeIo;
};

struct ServeStats {
  std::atomic<uint64_t> reads{0}, writes{0}, flushes{0}, trims{0}, errors{0};
  std::atomic<uint64_t> directIos{0}, bufferedIos{0};
  std::atomic<int> ioFlusherThreads{0}, ioFlusherFailures{0};
  std::atomic<int> maxInFlight{0};
};

class Server {
 public:
  // Takes the server-side ends of the connected sockets.
  Server(ServeOptions o, std::vector<UniqueFd> sockets);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void start();
  // Shuts the sockets down (receivers see EOF), lets the workers drain, joins everything.
  void stop();
  // Joins after the receivers ended on their own (the kernel disconnected).
  void join();
  // True once every receiver has ended (EOF, disconnect or protocol error).
  bool receiversDone() const { return liveReceivers_.load() == 0; }
  const ServeStats& stats() const { return stats_; }
  const std::string& lastError() const { return lastError_; }

 private:
  struct Job {
    size_t conn;
    Request req;
    unsigned char* data = nullptr;  // WRITE payload (aligned; freed by the worker)
  };
  void receive(size_t conn);
  void work();
  void serve(Job& j);
  int doRead(uint64_t off, unsigned char* buf, uint32_t len);
  int doWrite(uint64_t off, const unsigned char* buf, uint32_t len);
  void reply(size_t conn, const Request& req, int err, const unsigned char* data, uint32_t len);
  void fail(const std::string& why);

  ServeOptions o_;
  std::vector<UniqueFd> socks_;
  std::vector<std::unique_ptr<std::mutex>> sendMu_;
  std::vector<std::thread> receivers_, workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool closing_ = false;
  std::atomic<int> liveReceivers_{0};
  std::atomic<int> inFlight_{0};
  ServeStats stats_;
  std::mutex errMu_;
  std::string lastError_;
  bool joined_ = false;
};

// prctl(PR_SET_IO_FLUSHER, 1) for the calling thread; false (errno kept) when refused.
bool setIoFlusher();

// Reads exactly n bytes (EINTR-safe). 0 = ok, -1 = EOF before n bytes, else errno.
int readFull(int fd, void* buf, size_t n);

}  // namespace cxiosync::nbd
