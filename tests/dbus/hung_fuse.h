// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// A FUSE file system that stops answering one process: a raw /dev/fuse responder (no libfuse)
// with one regular file, "img" (1 MiB of zeros). It answers INIT, LOOKUP, GETATTR, OPEN,
// READ, STATFS and the releases for everyone, with entry and attribute timeouts of 0 (so
// every stat reaches it), EXCEPT requests from the threads of `hangPid`: those it never
// answers, as a file system on a dead network would. stop() (and the destructor) unmounts
// and closes /dev/fuse, which aborts the connection: every hung request then fails with
// ENOTCONN/ECONNABORTED and its caller goes on.
//
// Needs root, /dev/fuse and the fuse file system type (loaded with modprobe when missing).
#include <sys/types.h>

#include <atomic>
#include <string>
#include <thread>

namespace cxiosync::bustest {

class HungFuse {
 public:
  HungFuse() = default;
  HungFuse(const HungFuse&) = delete;
  HungFuse& operator=(const HungFuse&) = delete;
  ~HungFuse() { stop(); }

  // "" when mounted on `dir` (an empty directory), else why not.
  std::string mount(const std::string& dir);
  // From now on, requests of this process's threads are left unanswered.
  void hangFor(pid_t pid) { hangPid_ = pid; }
  // Requests left unanswered so far.
  int hung() const { return hung_; }
  void stop();

 private:
  void serve();
  void handle(const char* buf, size_t len);
  void reply(uint64_t unique, int error, const void* data, size_t size);
  bool fromHungProcess(uint32_t pid) const;

  int fd_ = -1;
  std::string dir_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<pid_t> hangPid_{-1};
  std::atomic<int> hung_{0};
};

}  // namespace cxiosync::bustest
