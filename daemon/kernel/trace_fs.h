// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// tracefs adapter (--tracefs-root, default /sys/kernel/tracing): private instances, event
// enabling, buffer size and the non-blocking trace_pipe. Virtual so tests can fake the
// kernel side (a real tracefs populates a new instance directory on mkdir; a temp dir does not).
#include <memory>
#include <string>
#include <vector>

#include "daemon/kernel/fs.h"
#include "policy/result.h"

namespace cxiosync {

namespace tracefile {
inline constexpr const char* kInstances = "instances";
inline constexpr const char* kEvents = "events";
inline constexpr const char* kEnable = "enable";
inline constexpr const char* kTracePipe = "trace_pipe";
inline constexpr const char* kBufferSizeKb = "buffer_size_kb";
inline constexpr const char* kTracingOn = "tracing_on";
inline constexpr const char* kBufferPercent = "buffer_percent";
inline constexpr const char* kTraceClock = "trace_clock";
}  // namespace tracefile

inline constexpr const char* kDefaultTracefsRoot = "/sys/kernel/tracing";

class TraceFs {
 public:
  static Result<std::unique_ptr<TraceFs>> open(const std::string& root = kDefaultTracefsRoot);
  TraceFs(UniqueFd rootFd, std::string root);
  virtual ~TraceFs() = default;
  const std::string& root() const { return root_; }

  virtual Result<std::vector<std::string>> listInstances() const;
  virtual Status createInstance(const std::string& name);
  // rmdir instances/NAME (the pipe must be closed first, or the kernel says EBUSY).
  virtual Status removeInstance(const std::string& name);
  // event = "syscalls/sys_enter_sync": writes "1"/"0" to instances/NAME/events/EVENT/enable.
  virtual Status setEventEnabled(const std::string& instance, const std::string& event, bool on);
  virtual Status setBufferSizeKb(const std::string& instance, unsigned kb);
  virtual Status setTracingOn(const std::string& instance, bool on);
  // 0: poll() on trace_pipe wakes on the first event (since 6.1 poll honours
  // buffer_percent, default 50). ENOENT on kernels without the file.
  virtual Status setBufferPercent(const std::string& instance, unsigned percent);
  // "mono": event timestamps on CLOCK_MONOTONIC (steady_clock), one clock for every CPU's
  // buffer (the default "local" is per CPU and not synchronised).
  virtual Status setTraceClock(const std::string& instance, const std::string& clock);
  // instances/NAME/trace_pipe, O_RDONLY | O_NONBLOCK | O_CLOEXEC.
  virtual Result<UniqueFd> openPipe(const std::string& instance);

 private:
  Status writeInInstance(const std::string& instance, const std::string& rel,
                         const std::string& data);
  UniqueFd rootFd_;
  std::string root_;
};

}  // namespace cxiosync
