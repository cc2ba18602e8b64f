// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The block-device vocabulary every layer shares (pure): which backend serves a device, the
// direct-I/O modes, the limits a caller's numbers are checked against, and device names. The
// daemon (daemon/blockdev/), the bus boundary (dbus/loop_wire) and the CLIs use these enums
// and constants instead of strings and copied numbers.
#include <cstdint>
#include <optional>
#include <string_view>

#include "policy/result.h"

namespace cxiosync {

// kernel: the kernel loop driver (/dev/loopN); nbd: the kernel nbd driver served by
// cxiosync-nbd-server; auto: chosen at setup (daemon/blockdev/backend.h, chooseBackend).
enum class BackendKind { Kernel, Nbd, Auto };
const char* backendKindName(BackendKind k);  // "kernel" | "nbd" | "auto"
// The names above only (the wire's spelling); nullopt otherwise.
std::optional<BackendKind> backendKindFromName(std::string_view name);
// "kernel" (also "loop"), "nbd", "auto". EINVAL with the accepted values otherwise.
Result<BackendKind> parseBackendKind(std::string_view text);

// What the caller asked for about direct I/O on the backing file.
//   On:   direct I/O or nothing: setup fails (and leaves no device behind) when the kernel
//         refuses it.
//   Auto: (default) try direct I/O; when the kernel refuses, keep a buffered device and say
//         why.
//   Off:  buffered (the kernel's own default).
enum class DirectIoMode { Auto, On, Off };
const char* directIoModeName(DirectIoMode m);                             // "auto" | "on" | "off"
std::optional<DirectIoMode> directIoModeFromName(std::string_view name);  // those three only
// Also yes/true/1 and no/false/0 (the dev tool's command line). EINVAL otherwise.
Result<DirectIoMode> parseDirectIoMode(std::string_view text);

// Workers: 1..kMaxLoopWorkers. The 2020 loop experiment was flat beyond 4; 16 leaves room for
// deep backing stores (NVMe, network) without letting one device spawn hundreds of threads.
inline constexpr int kMaxLoopWorkers = 16;
// Request depth of a kernel loop device (queue/nr_requests): 4 (the block layer's minimum,
// BLKDEV_MIN_RQ) .. the loop module's hw_queue_depth, which only the daemon can read; a caller's
// value above kMaxQueueDepth is refused before that.
inline constexpr uint32_t kMinQueueDepth = 4;
inline constexpr uint32_t kMaxQueueDepth = 65536;
// Logical block size: 0 (chosen) or a power of two in [kMinBlockSize, kMaxBlockSize].
inline constexpr uint32_t kMinBlockSize = 512;
inline constexpr uint32_t kMaxBlockSize = 65536;
bool validBlockSize(uint64_t size);
// nbd I/O timeout: at most a day (0 = the backend's default).
inline constexpr uint32_t kMaxNbdTimeoutSec = 86400;

// Whether `name` is loopN or nbdN (N decimal, no sign, no leading zero, at most 9 digits):
// the names of the D-Bus Loop objects.
bool validLoopName(std::string_view name);

}  // namespace cxiosync
