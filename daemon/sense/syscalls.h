// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Sync-family syscall numbers per architecture, as /proc/TID/syscall reports them.
// The table is picked at compile time (hostSyscallTable()); tests pass another one.
#include <cstdint>
#include <optional>
#include <string_view>

#include "policy/model/snapshot.h"

namespace cxiosync {

struct SyscallTable {
  const char* arch;
  int64_t sync, syncfs, fsync, fdatasync, syncFileRange, msync;

  std::optional<SyncSyscall> lookup(int64_t nr) const;
  int64_t numberOf(SyncSyscall s) const;
};

// x86_64: arch/x86/entry/syscalls/syscall_64.tbl.
inline constexpr SyscallTable kSyscallsX86_64{"x86_64", 162, 306, 74, 75, 277, 26};
// asm-generic (arm64, riscv, loongarch): include/uapi/asm-generic/unistd.h.
inline constexpr SyscallTable kSyscallsGeneric{"generic", 81, 267, 82, 83, 84, 227};

// The table of the architecture this binary was built for.
const SyscallTable& hostSyscallTable();

// Inverse of syncSyscallName (policy/model/snapshot.h); nullopt for other names.
std::optional<SyncSyscall> syncSyscallFromText(std::string_view name);
// sync and syncfs always; the fsync family only with watch_fsync.
bool isWatched(SyncSyscall s, bool watchFsync);
// The syscall takes an fd as arg0 (syncfs, fsync, fdatasync, sync_file_range).
bool takesFd(SyncSyscall s);

}  // namespace cxiosync
