// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/backend.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/kernel/fs.h"

namespace cxiosync {

namespace {

bool exists(const std::string& p) {
  return ::access(p.c_str(), F_OK) == 0;
}

std::optional<std::string> slurp(const std::string& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  UniqueFd f(fd);
  auto r = readAll(f.get(), p);
  if (!r) return std::nullopt;
  return *r;
}

bool mentionsModule(const std::optional<std::string>& text, const std::string& ko) {
  if (!text) return false;
  // lines like "kernel/drivers/block/nbd.ko: ..." or "kernel/drivers/block/nbd.ko.xz:"
  size_t pos = 0;
  while ((pos = text->find(ko, pos)) != std::string::npos) {
    if (pos > 0 && (*text)[pos - 1] == '/') return true;
    ++pos;
  }
  return false;
}

Result<int64_t> parseDec(std::string_view what, std::string_view text) {
  if (text.empty())
    return makeError(std::string(what) + ": empty value, expected a number", EINVAL);
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return makeError(std::string(what) + ": \"" + std::string(text) + "\" is not a number",
                       EINVAL);
    if (v > 1000000000) return makeError(std::string(what) + ": value too large", EINVAL);
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

Status validateWorkers(int64_t n) {
  if (n < 1 || n > kMaxLoopWorkers)
    return makeError("workers must be between 1 and " + std::to_string(kMaxLoopWorkers) + ", not " +
                         std::to_string(n),
                     EINVAL);
  return Ok{};
}

Result<int> parseWorkers(std::string_view text) {
  auto v = parseDec("workers", text);
  if (!v) return v.error();
  if (auto s = validateWorkers(*v); !s) return s.error();
  return static_cast<int>(*v);
}

Status validateQueueDepth(int64_t n, uint32_t hw) {
  const int64_t max = hw ? hw : 128;
  if (n < kMinQueueDepth || n > max)
    return makeError(
        "queue depth must be between " + std::to_string(kMinQueueDepth) + " and " +
            std::to_string(max) +
            (hw ? " (the loop module's hw_queue_depth)" : " (assumed hw_queue_depth)") + ", not " +
            std::to_string(n),
        EINVAL);
  return Ok{};
}

Result<uint32_t> parseQueueDepth(std::string_view text, uint32_t hw) {
  auto v = parseDec("queue depth", text);
  if (!v) return v.error();
  if (auto s = validateQueueDepth(*v, hw); !s) return s.error();
  return static_cast<uint32_t>(*v);
}

uint32_t loopHwQueueDepth(const std::string& sysRoot) {
  auto t = slurp(sysRoot + "/module/loop/parameters/hw_queue_depth");
  if (!t) return 0;
  uint32_t v = 0;
  for (char c : *t) {
    if (c < '0' || c > '9') break;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v;
}

BackendAvailability detectBackends(const std::string& sysRoot, const std::string& devRoot,
                                   const std::string& modulesDirIn) {
  BackendAvailability a;
  std::string modulesDir = modulesDirIn;
  if (modulesDir.empty()) {
    struct utsname u {};
    if (::uname(&u) == 0) modulesDir = std::string("/lib/modules/") + u.release;
  }
  const auto dep = slurp(modulesDir + "/modules.dep");
  const auto builtin = slurp(modulesDir + "/modules.builtin");

  a.loop = exists(devRoot + "/loop-control");
  a.loopNote =
      a.loop ? devRoot + "/loop-control" : devRoot + "/loop-control absent (modprobe loop)";
  a.loopHwQueueDepth = loopHwQueueDepth(sysRoot);

  a.nbdLoaded = exists(sysRoot + "/module/nbd");
  const bool nbdModule = mentionsModule(dep, "nbd.ko") || mentionsModule(builtin, "nbd.ko");
  a.nbd = a.nbdLoaded || nbdModule;
  a.nbdNote = a.nbdLoaded ? "nbd loaded"
              : nbdModule ? "nbd module available (loaded on first use)"
                          : "no nbd module in " + modulesDir;

  a.ublk = exists(devRoot + "/ublk-control");
  const bool ublkModule = mentionsModule(dep, "ublk_drv.ko");
  a.ublkNote = a.ublk ? devRoot + "/ublk-control present (no cxiosync ublk backend yet)"
               : ublkModule
                   ? "ublk_drv module available but not loaded (no cxiosync ublk backend yet)"
                   : "absent: no " + devRoot + "/ublk-control and no ublk_drv module";
  return a;
}

Result<BackendChoice> chooseBackend(BackendKind requested, int workers, DirectIoMode dio,
                                    const std::string& dioImpossibleWhy,
                                    const BackendAvailability& avail) {
  if (workers != 0)
    if (auto s = validateWorkers(workers); !s) return s.error();
  const bool many = workers > 1;
  const bool dioOut = dio == DirectIoMode::Off || !dioImpossibleWhy.empty();
  BackendChoice c;
  switch (requested) {
    case BackendKind::Kernel:
      if (many)
        return makeError(
            "the kernel loop driver has no worker count (one worker per cgroup); for "
            "concurrency use direct I/O (asynchronous, up to queue_depth requests in flight) "
            "or --backend nbd for " +
                std::to_string(workers) + " worker threads",
            EINVAL);
      c.kind = BackendKind::Kernel;
      c.reason = "kernel loop requested";
      return c;
    case BackendKind::Nbd:
      if (!avail.nbd)
        return makeError("the nbd backend is not available: " + avail.nbdNote, ENOTSUP);
      c.kind = BackendKind::Nbd;
      c.reason = "nbd requested";
      return c;
    case BackendKind::Auto:
      break;
  }
  if (many && dioOut) {
    if (!avail.nbd)
      return makeError(std::to_string(workers) + " workers need the nbd backend (direct I/O is " +
                           (dio == DirectIoMode::Off ? std::string("off") : dioImpossibleWhy) +
                           "), which is not available: " + avail.nbdNote,
                       ENOTSUP);
    c.kind = BackendKind::Nbd;
    c.reason =
        std::to_string(workers) + " workers asked and direct I/O is " +
        (dio == DirectIoMode::Off ? std::string("off") : "impossible (" + dioImpossibleWhy + ")") +
        ": nbd with " + std::to_string(workers) + " worker threads";
    return c;
  }
  c.kind = BackendKind::Kernel;
  c.reason = many ? std::to_string(workers) +
                        " workers asked, direct I/O possible: kernel loop with asynchronous direct "
                        "I/O (many requests in flight; --backend nbd forces worker threads)"
                  : "kernel loop";
  return c;
}

Result<uint32_t> readQueueDepth(const std::string& sysRoot, const std::string& name) {
  const std::string p = sysRoot + "/block/" + name + "/queue/nr_requests";
  auto t = slurp(p);
  if (!t) return sysError(errno ? errno : ENOENT, "read", p);
  uint32_t v = 0;
  for (char c : *t) {
    if (c < '0' || c > '9') break;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v;
}

Status writeQueueDepth(const std::string& sysRoot, const std::string& name, uint32_t depth) {
  const std::string p = sysRoot + "/block/" + name + "/queue/nr_requests";
  int fd = ::open(p.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return sysError(errno, "open", p);
  UniqueFd f(fd);
  const std::string v = std::to_string(depth);
  if (::write(f.get(), v.data(), v.size()) < 0)
    return makeError(
        name + ": the kernel refused queue depth " + v + " (" + std::strerror(errno) + ")", errno);
  return Ok{};
}

}  // namespace cxiosync
