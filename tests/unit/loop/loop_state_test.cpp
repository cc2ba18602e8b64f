// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/loop/loop_state.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fake_loop_kernel.h"

namespace cxiosync {
namespace {

using testing::TempDir;

LoopRecord rec(int index, uint32_t uid, int64_t created = 100) {
  LoopRecord r;
  r.index = index;
  r.uid = uid;
  r.createdUnix = created;
  r.backingFsDevice = {8, 1};
  r.backingInode = 1000 + static_cast<uint64_t>(index);
  r.backingFile = "/srv/img " + std::to_string(index) + " \"q\"\\.img";
  r.options.offset = 4096;
  r.options.sizeLimit = 1 << 20;
  r.options.autoclear = true;
  r.options.directIo = DirectIoMode::On;
  r.options.blockSize = 4096;
  r.blockSizeChosen = 4096;
  r.blockSizeSource = BlockSizeSource::DioAlign;
  r.directIoNote = "tmpfs\tsays no";
  return r;
}

TEST(LoopStateJson, RoundTrip) {
  std::vector<LoopRecord> in{rec(0, 1000), rec(5, 0)};
  auto out = loopRecordsFromJson(loopRecordsToJson(in));
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->size(), 2u);
  const auto& a = (*out)[0];
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.uid, 1000u);
  EXPECT_EQ(a.createdUnix, 100);
  EXPECT_EQ(a.backingFsDevice, (DevNum{8, 1}));
  EXPECT_EQ(a.backingInode, 1000u);
  EXPECT_EQ(a.backingFile, in[0].backingFile);
  EXPECT_EQ(a.options.offset, 4096u);
  EXPECT_EQ(a.options.sizeLimit, 1u << 20);
  EXPECT_TRUE(a.options.autoclear);
  EXPECT_FALSE(a.options.readOnly);
  EXPECT_EQ(a.options.directIo, DirectIoMode::On);
  EXPECT_EQ(a.options.blockSize, 4096u);
  EXPECT_EQ(a.blockSizeSource, BlockSizeSource::DioAlign);
  EXPECT_EQ(a.directIoNote, "tmpfs\tsays no");
  EXPECT_EQ(a.backend, "kernel");
  EXPECT_EQ((*out)[1].index, 5);
}

TEST(LoopStateJson, EmptyAndMalformed) {
  auto e = loopRecordsFromJson("{\"version\":1,\"loops\":[]}");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->empty());
  for (const char* bad : {"[1,2]", "{\"loops\":{}}", "{\"loops\":[", "", "{not json"}) {
    auto r = loopRecordsFromJson(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_EQ(r.error().code, EINVAL);
    }
  }
  for (const char* skip : {"{\"loops\":[{\"index\":\"x\"}]}", "{\"loops\":[{\"index\":1}]}",
                           "{\"loops\":[{\"index\":1,\"uid\":0,\"backing_dev\":\"8\","
                           "\"backing_inode\":1}]}",
                           "{\"loops\":[{\"index\":-1,\"uid\":0,\"backing_dev\":\"8:1\","
                           "\"backing_inode\":1}]}",
                           "{\"loops\":[{\"index\":1,\"uid\":4294967296,\"backing_dev\":\"8:1\","
                           "\"backing_inode\":1}]}",
                           "{\"loops\":[7]}"}) {
    std::vector<std::string> skipped;
    auto r = loopRecordsFromJson(skip, &skipped);
    ASSERT_TRUE(r) << skip;
    EXPECT_TRUE(r->empty()) << skip;
    EXPECT_EQ(skipped.size(), 1u) << skip;
  }
}

// loops.json exactly as the daemon wrote it before nlohmann-json: read the same, written the
// same.
const char* const kTodaysLoopState = R"({
  "version": 1,
  "loops": [
    {
      "device": "loop3",
      "index": 3,
      "uid": 1000,
      "created": 1700000000,
      "backing_dev": "8:1",
      "backing_inode": 1003,
      "backing_file": "/srv/img 3 \"q\"\\.img",
      "backend": "kernel",
      "options": {
        "read_only": false,
        "offset": 4096,
        "size_limit": 1048576,
        "autoclear": true,
        "partscan": false,
        "block_size": 4096,
        "direct_io": "on",
        "queue_depth": 0
      },
      "block_size_chosen": 4096,
      "block_size_source": "dio-align",
      "direct_io_note": "tmpfs\tsays no"
    }
  ]
}
)";

TEST(LoopStateJson, ReadsTodaysFormatIdentically) {
  auto out = loopRecordsFromJson(kTodaysLoopState);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->size(), 1u);
  LoopRecord want = rec(3, 1000, 1700000000);
  const LoopRecord& a = (*out)[0];
  EXPECT_EQ(a.backingFile, want.backingFile);
  EXPECT_EQ(a.backingInode, 1003u);
  EXPECT_EQ(a.options.directIo, DirectIoMode::On);
  EXPECT_EQ(a.blockSizeSource, BlockSizeSource::DioAlign);
  EXPECT_EQ(a.directIoNote, "tmpfs\tsays no");
  EXPECT_EQ(loopRecordsToJson(*out), kTodaysLoopState);
}

TEST(LoopStateJson, ToleratesOtherVersions) {
  std::string text = loopRecordsToJson({rec(0, 1000), rec(1, 1001), rec(2, 1002)});
  // A newer version with keys this one does not know, one record of which cannot be read.
  text.replace(text.find("\"version\": 1"), 12, "\"version\": 4, \"owner_map\": {}");
  text.replace(text.find("\"backend\""), 0, "\"future\": [1, {\"x\": null}], ");
  size_t second = text.find("\"index\": 1");
  text.replace(text.find("\"uid\": 1001", second), 11, "\"uid\": \"alice\"");
  std::vector<std::string> skipped;
  auto out = loopRecordsFromJson(text, &skipped);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].index, 0);
  EXPECT_EQ((*out)[1].index, 2);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("uid"), std::string::npos) << skipped[0];
}

TEST(LoopStateStore, RecordsThatCannotBeReadAreSkippedAndTheFileKept) {
  TempDir t;
  LoopStateStore s(t.path());
  std::string text = loopRecordsToJson({rec(0, 1000), rec(1, 1001)});
  text.replace(text.find("\"backing_dev\": \"8:1\""), 20, "\"backing_dev\": 801");
  std::ofstream(s.path()) << text;
  auto r = s.load();
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].index, 1);
  ASSERT_EQ(s.skipped().size(), 1u);
  EXPECT_NE(s.skipped()[0].find("loops[0]"), std::string::npos) << s.skipped()[0];
  std::ifstream bad(s.path() + ".bad");
  std::string kept((std::istreambuf_iterator<char>(bad)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, text);
}

TEST(LoopStateStore, TruncatedFileIsAnErrorAndCanBeQuarantined) {
  TempDir t;
  LoopStateStore s(t.path());
  std::string text = loopRecordsToJson({rec(0, 1000), rec(1, 1001)});
  std::ofstream(s.path()) << text.substr(0, text.size() / 2);
  auto r = s.load();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  s.quarantine();
  EXPECT_TRUE(s.load());
}

TEST(LoopStateStore, SaveLoadInRunDir) {
  TempDir t;
  LoopStateStore s(t.path() + "/run");
  auto empty = s.load();
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  {
    auto lk = s.lock();
    ASSERT_TRUE(lk) << lk.error().message;
    ASSERT_TRUE(s.save({rec(2, 1000)}));
  }
  EXPECT_FALSE(std::filesystem::exists(s.path() + ".tmp"));
  auto back = s.load();
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].index, 2);
}

TEST(LoopStateStore, CorruptFileIsAnErrorAndCanBeQuarantined) {
  TempDir t;
  LoopStateStore s(t.path());
  std::ofstream(s.path()) << "{not json";
  auto r = s.load();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  s.quarantine();
  EXPECT_TRUE(std::filesystem::exists(s.path() + ".bad"));
  EXPECT_TRUE(s.load());
}

LoopKernelState bound(int index, DevNum dev, uint64_t ino, std::string file = "/x") {
  LoopKernelState k;
  k.index = index;
  k.bound = true;
  k.backingFile = std::move(file);
  k.backingFsDevice = dev;
  k.backingInode = ino;
  return k;
}

TEST(Reconcile, KeepsMatchingDropsGoneAndReplaced) {
  std::vector<LoopRecord> recs{rec(0, 1), rec(1, 1), rec(2, 1), rec(3, 1)};
  std::map<int, LoopKernelState> k;
  k[0] = bound(0, {8, 1}, 1000);  // ours
  LoopKernelState unbound;
  unbound.index = 1;
  k[1] = unbound;                 // detached
  k[2] = bound(2, {8, 1}, 4242);  // someone else's file now
  // 3: gone entirely
  auto r = reconcileLoopRecords(recs, k);
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_EQ(r.kept[0].index, 0);
  ASSERT_EQ(r.dropped.size(), 3u);
  std::string all;
  for (const auto& d : r.dropped) all += d.reason + "\n";
  EXPECT_NE(all.find("loop1 was detached"), std::string::npos) << all;
  EXPECT_NE(all.find("loop2 is now backed by another file"), std::string::npos) << all;
  EXPECT_NE(all.find("loop3 no longer exists"), std::string::npos) << all;
}

TEST(Reconcile, DifferentDeviceSameInodeIsNotOurs) {
  auto r = reconcileLoopRecords({rec(0, 1)}, {{0, bound(0, {8, 2}, 1000)}});
  EXPECT_TRUE(r.kept.empty());
}

TEST(Reconcile, FallsBackToPathWhenStatusUnknown) {
  LoopRecord a = rec(0, 1);
  a.backingFile = "/img/a.img";
  LoopKernelState k;
  k.index = 0;
  k.bound = true;
  k.backingFile = "/img/a.img (deleted)";
  auto r = reconcileLoopRecords({a}, {{0, k}});
  EXPECT_EQ(r.kept.size(), 1u);
  k.backingFile = "/img/b.img";
  r = reconcileLoopRecords({a}, {{0, k}});
  EXPECT_TRUE(r.kept.empty());
}

// A device detached and attached again by someone else, to the very same file, is not ours:
// the kernel's diskseq moved on. (dev/inode alone said "ours" before.)
TEST(Reconcile, AReattachedDeviceIsNotOursEvenOnTheSameFile) {
  LoopRecord a = rec(0, 1);
  a.diskseq = 41;
  auto k = bound(0, {8, 1}, 1000);
  k.diskseq = 41;
  EXPECT_EQ(reconcileLoopRecords({a}, {{0, k}}).kept.size(), 1u);
  k.diskseq = 43;  // detached (42) and attached again (43)
  auto r = reconcileLoopRecords({a}, {{0, k}});
  EXPECT_TRUE(r.kept.empty());
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_NE(r.dropped[0].reason.find("attached again"), std::string::npos) << r.dropped[0].reason;
  // Unknown on either side (a kernel before 5.15, an older record): dev/inode decide.
  k.diskseq.reset();
  EXPECT_EQ(reconcileLoopRecords({a}, {{0, k}}).kept.size(), 1u);
  a.diskseq = 0;
  k.diskseq = 43;
  EXPECT_EQ(reconcileLoopRecords({a}, {{0, k}}).kept.size(), 1u);
}

TEST(LoopStateJson, DiskseqRoundTripsAndIsOptional) {
  LoopRecord a = rec(0, 1);
  a.diskseq = 123456789012ull;
  auto text = loopRecordsToJson({a, rec(1, 1)});
  EXPECT_NE(text.find("\"diskseq\": 123456789012"), std::string::npos) << text;
  auto out = loopRecordsFromJson(text);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].diskseq, 123456789012ull);
  EXPECT_EQ((*out)[1].diskseq, 0u);
}

TEST(Reconcile, NewestDuplicateWins) {
  LoopRecord older = rec(0, 1, 10), newer = rec(0, 2, 20);
  auto r = reconcileLoopRecords({older, newer}, {{0, bound(0, {8, 1}, 1000)}});
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_EQ(r.kept[0].uid, 2u);
  EXPECT_EQ(r.dropped.size(), 1u);
}

}  // namespace
}  // namespace cxiosync

namespace cxiosync {
namespace {

TEST(LoopStateJson, NonUtf8BackingPathRoundTrips) {
  LoopRecord r;
  r.index = 1;
  r.backingFile = "/srv/\xff\xfeimg\\x41\\xff\n";
  std::string text = loopRecordsToJson({r});
  EXPECT_NE(text.find("/srv/\\\\xff\\\\xfeimg"), std::string::npos) << text;
  auto back = loopRecordsFromJson(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ((*back)[0].backingFile, r.backingFile);
}

}  // namespace
}  // namespace cxiosync
