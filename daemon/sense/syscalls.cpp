// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sense/syscalls.h"

#include "daemon/sense/detector.h"

namespace cxiosync {

std::optional<SyncSyscall> SyscallTable::lookup(int64_t nr) const {
  if (nr < 0) return std::nullopt;
  if (nr == sync) return SyncSyscall::Sync;
  if (nr == syncfs) return SyncSyscall::Syncfs;
  if (nr == fsync) return SyncSyscall::Fsync;
  if (nr == fdatasync) return SyncSyscall::Fdatasync;
  if (nr == syncFileRange) return SyncSyscall::SyncFileRange;
  if (nr == msync) return SyncSyscall::Msync;
  return std::nullopt;
}

int64_t SyscallTable::numberOf(SyncSyscall s) const {
  switch (s) {
    case SyncSyscall::Sync:
      return sync;
    case SyncSyscall::Syncfs:
      return syncfs;
    case SyncSyscall::Fsync:
      return fsync;
    case SyncSyscall::Fdatasync:
      return fdatasync;
    case SyncSyscall::SyncFileRange:
      return syncFileRange;
    case SyncSyscall::Msync:
      return msync;
  }
  return -1;
}

const SyscallTable& hostSyscallTable() {
#if defined(__x86_64__) && !defined(__ILP32__)
  return kSyscallsX86_64;
#elif defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64) || defined(__loongarch64)
  return kSyscallsGeneric;
#else
#error "cxiosync: no sync-family syscall table for this architecture (daemon/sense/syscalls.h)"
#endif
}

std::optional<SyncSyscall> syncSyscallFromText(std::string_view name) {
  for (auto s : {SyncSyscall::Sync, SyncSyscall::Syncfs, SyncSyscall::Fsync, SyncSyscall::Fdatasync,
                 SyncSyscall::SyncFileRange, SyncSyscall::Msync}) {
    if (name == syncSyscallName(s)) return s;
  }
  return std::nullopt;
}

bool isWatched(SyncSyscall s, bool watchFsync) {
  return s == SyncSyscall::Sync || s == SyncSyscall::Syncfs || watchFsync;
}

bool takesFd(SyncSyscall s) {
  return s == SyncSyscall::Syncfs || s == SyncSyscall::Fsync || s == SyncSyscall::Fdatasync ||
         s == SyncSyscall::SyncFileRange;
}

const char* detectorKindName(DetectorKind k) {
  switch (k) {
    case DetectorKind::Auto:
      return "auto";
    case DetectorKind::Tracefs:
      return "tracefs";
    case DetectorKind::Procfs:
      return "procfs";
  }
  return "?";
}

}  // namespace cxiosync
