// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/formats/memory_stat.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

constexpr const char* kSample =
    "anon 1662976\n"
    "file 35135488\n"
    "kernel 1064960\n"
    "kernel_stack 49152\n"
    "pagetables 98304\n"
    "sec_pagetables 0\n"
    "percpu 0\n"
    "sock 0\n"
    "vmalloc 0\n"
    "shmem 0\n"
    "zswap 0\n"
    "zswapped 0\n"
    "file_mapped 0\n"
    "file_dirty 33554432\n"
    "file_writeback 1048576\n"
    "swapcached 0\n"
    "anon_thp 0\n"
    "file_thp 0\n"
    "shmem_thp 0\n"
    "inactive_anon 1630208\n"
    "active_anon 32768\n"
    "inactive_file 35123200\n"
    "active_file 12288\n"
    "unevictable 0\n"
    "slab_reclaimable 501024\n"
    "slab_unreclaimable 329152\n"
    "slab 830176\n"
    "workingset_refault_anon 0\n"
    "workingset_refault_file 0\n"
    "workingset_activate_anon 0\n"
    "workingset_activate_file 0\n"
    "workingset_restore_anon 0\n"
    "workingset_restore_file 0\n"
    "workingset_nodereclaim 0\n"
    "pgscan 0\n"
    "pgsteal 0\n"
    "pgscan_kswapd 0\n"
    "pgscan_direct 0\n"
    "pgsteal_kswapd 0\n"
    "pgsteal_direct 0\n"
    "pgfault 1093\n"
    "pgmajfault 0\n"
    "pgrefill 0\n"
    "pgactivate 3\n"
    "pgdeactivate 0\n"
    "pglazyfree 0\n"
    "pglazyfreed 0\n"
    "thp_fault_alloc 0\n"
    "thp_collapse_alloc 0\n";

TEST(MemoryStat, ParsesKernelText) {
  auto r = parseMemoryStat(kSample);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->fileDirty(), 33554432u);
  EXPECT_EQ(r->fileWriteback(), 1048576u);
  EXPECT_EQ(r->values.at("anon"), 1662976u);
  EXPECT_EQ(r->values.at("pgfault"), 1093u);
  EXPECT_EQ(r->values.size(), 49u);
}

TEST(MemoryStat, AbsentKeysReadAsZero) {
  auto r = parseMemoryStat("anon 5\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->fileDirty(), 0u);
  EXPECT_EQ(r->fileWriteback(), 0u);
}

TEST(MemoryStat, EmptyNoNewlineCrlfAndMax) {
  auto e = parseMemoryStat("");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->values.empty());
  auto r = parseMemoryStat("file_dirty 18446744073709551615\r\nfile_writeback 7");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->fileDirty(), UINT64_MAX);
  EXPECT_EQ(r->fileWriteback(), 7u);
}

TEST(MemoryStat, RejectsHostileInput) {
  const std::string bad[] = {
      "file_dirty 18446744073709551616",
      "file_dirty -1",
      "file_dirty +1",
      "file_dirty 1.0",
      "file_dirty",
      "file_dirty 1 2",
      "file_dirty 1\nfile_dirty 2",
      "file_dirty=1",
      "file_dirty 0x10",
      std::string("file_dirty 1\0", 13),
      "anon 1\nfile_dirty \xff",
  };
  for (const auto& b : bad) {
    auto r = parseMemoryStat(b);
    EXPECT_FALSE(r.ok()) << "accepted: " << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("memory.stat: line ", 0), 0u) << r.error().message;
    }
  }
}

TEST(MemoryStat, ErrorNamesLine) {
  auto r = parseMemoryStat("anon 1\nfile 2\nfile_dirty lots\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("line 3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("file_dirty"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace cxiosync
