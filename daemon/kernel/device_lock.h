// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The BSD lock a program holds on a block device node while it configures the device
// (systemd's docs/BLOCK_DEVICE_LOCKING.md, as loop-util.c does for /dev/loopN): udev takes
// LOCK_SH|LOCK_NB before it probes a device and skips it while someone holds LOCK_EX, so
// nothing probes (or mounts, or reads a partition table off) a half-made device.
//
// The lock lives on a second open file description (the node reopened through
// /proc/self/fd), as systemd does: closing it releases the lock, and the device fd itself, which
// the caller keeps or hands on, carries no lock.
#include "daemon/kernel/fs.h"
#include "policy/result.h"

namespace cxiosync {

// LOCK_EX|LOCK_NB on a reopen of `devFd`. EWOULDBLOCK: another program holds a lock on the
// node (it is configuring the device, or udev is probing it): take another device or retry.
// An empty fd (Ok) when the node cannot be reopened (no /proc): configure without the lock.
Result<UniqueFd> lockDeviceNode(int devFd);

// Releases the lock (closes its fd). For the VM test only: with CXIOSYNC_TEST_DEVICE_LOCK_HOLD_MS
// in the environment (capped at 30 s) the lock is held that much longer first, so a test can
// see a second `flock -n` on the node fail while the device is being configured.
void releaseDeviceLock(UniqueFd& lock);

}  // namespace cxiosync
