// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/backend.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "daemon/blockdev/nbd/nbd_manager.h"

using namespace cxiosync;

TEST(Workers, ParseAcceptsOneToMax) {
  EXPECT_EQ(*parseWorkers("1"), 1);
  EXPECT_EQ(*parseWorkers("4"), 4);
  EXPECT_EQ(*parseWorkers("16"), kMaxLoopWorkers);
}

TEST(Workers, ParseRejectsWithClearErrors) {
  for (const char* bad : {"0", "17", "100000000000", "-1", "four", "4x", "", " 4", "0x4", "4.0"}) {
    auto r = parseWorkers(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, EINVAL) << bad;
    EXPECT_NE(r.error().message.find("workers"), std::string::npos) << r.error().message;
  }
  EXPECT_NE(parseWorkers("0").error().message.find("between 1 and 16"), std::string::npos);
  EXPECT_NE(parseWorkers("four").error().message.find("not a number"), std::string::npos);
}

TEST(Backend, ParseKinds) {
  EXPECT_EQ(*parseBackendKind("kernel"), BackendKind::Kernel);
  EXPECT_EQ(*parseBackendKind("loop"), BackendKind::Kernel);
  EXPECT_EQ(*parseBackendKind("nbd"), BackendKind::Nbd);
  EXPECT_EQ(*parseBackendKind("auto"), BackendKind::Auto);
  auto bad = parseBackendKind("ublk");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("kernel, nbd or auto"), std::string::npos);
}

TEST(QueueDepth, BoundedByHwQueueDepth) {
  EXPECT_EQ(*parseQueueDepth("4", 128), 4u);
  EXPECT_EQ(*parseQueueDepth("128", 128), 128u);
  EXPECT_FALSE(parseQueueDepth("129", 128));
  EXPECT_FALSE(parseQueueDepth("3", 128));
  EXPECT_FALSE(parseQueueDepth("lots", 128));
  EXPECT_EQ(*parseQueueDepth("256", 256), 256u);
  EXPECT_NE(parseQueueDepth("129", 128).error().message.find("hw_queue_depth"), std::string::npos);
}

namespace {
BackendAvailability all() {
  BackendAvailability a;
  a.loop = a.nbd = true;
  return a;
}
}  // namespace

TEST(Backend, AutoRule) {
  // Default: kernel loop.
  EXPECT_EQ(chooseBackend(BackendKind::Auto, 0, DirectIoMode::Auto, "", all())->kind,
            BackendKind::Kernel);
  EXPECT_EQ(chooseBackend(BackendKind::Auto, 1, DirectIoMode::Off, "", all())->kind,
            BackendKind::Kernel);
  // Many workers with direct I/O possible: the kernel loop's async direct I/O.
  auto k = chooseBackend(BackendKind::Auto, 4, DirectIoMode::Auto, "", all());
  EXPECT_EQ(k->kind, BackendKind::Kernel);
  EXPECT_NE(k->reason.find("direct I/O"), std::string::npos);
  // Many workers and direct I/O off or impossible: nbd.
  EXPECT_EQ(chooseBackend(BackendKind::Auto, 4, DirectIoMode::Off, "", all())->kind,
            BackendKind::Nbd);
  auto n = chooseBackend(BackendKind::Auto, 2, DirectIoMode::Auto, "tmpfs has no O_DIRECT", all());
  EXPECT_EQ(n->kind, BackendKind::Nbd);
  EXPECT_NE(n->reason.find("tmpfs"), std::string::npos);
}

TEST(Backend, KernelWithWorkersIsRefusedNotIgnored) {
  auto r = chooseBackend(BackendKind::Kernel, 4, DirectIoMode::Auto, "", all());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no worker count"), std::string::npos);
  EXPECT_TRUE(chooseBackend(BackendKind::Kernel, 1, DirectIoMode::Auto, "", all()));
}

TEST(Backend, NbdUnavailable) {
  BackendAvailability a;
  a.loop = true;
  a.nbdNote = "no nbd module";
  auto r = chooseBackend(BackendKind::Nbd, 2, DirectIoMode::Auto, "", a);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOTSUP);
  EXPECT_FALSE(chooseBackend(BackendKind::Auto, 2, DirectIoMode::Off, "", a));
  EXPECT_FALSE(chooseBackend(BackendKind::Auto, 0, DirectIoMode::Auto, "", all()) ? false : true);
  EXPECT_FALSE(chooseBackend(BackendKind::Auto, 17, DirectIoMode::Auto, "", all()));
}

class FakeRoots : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/cxbackend.XXXXXX";
    root_ = ::mkdtemp(t);
    for (const char* d :
         {"/sys", "/sys/module", "/sys/module/loop", "/sys/module/loop/parameters", "/dev", "/mod",
          "/sys/block", "/sys/block/loop0", "/sys/block/loop0/queue"})
      ::mkdir((root_ + d).c_str(), 0755);
    put("/sys/module/loop/parameters/hw_queue_depth", "128\n");
    put("/sys/block/loop0/queue/nr_requests", "128\n");
  }
  void TearDown() override { (void)std::system(("rm -rf " + root_).c_str()); }
  void put(const std::string& p, const std::string& v) { std::ofstream(root_ + p) << v; }
  std::string root_;
};

TEST_F(FakeRoots, DetectsWhatIsThere) {
  auto a = detectBackends(root_ + "/sys", root_ + "/dev", root_ + "/mod");
  EXPECT_FALSE(a.loop);
  EXPECT_FALSE(a.nbd);
  EXPECT_FALSE(a.ublk);
  EXPECT_NE(a.ublkNote.find("absent"), std::string::npos);
  EXPECT_EQ(a.loopHwQueueDepth, 128u);
  put("/dev/loop-control", "");
  put("/mod/modules.dep", "kernel/drivers/block/nbd.ko.xz:\nkernel/drivers/block/loop.ko.xz:\n");
  a = detectBackends(root_ + "/sys", root_ + "/dev", root_ + "/mod");
  EXPECT_TRUE(a.loop);
  EXPECT_TRUE(a.nbd);
  EXPECT_FALSE(a.nbdLoaded);
  ::mkdir((root_ + "/sys/module/nbd").c_str(), 0755);
  put("/dev/ublk-control", "");
  a = detectBackends(root_ + "/sys", root_ + "/dev", root_ + "/mod");
  EXPECT_TRUE(a.nbdLoaded);
  EXPECT_TRUE(a.ublk);
}

TEST_F(FakeRoots, QueueDepthReadWrite) {
  EXPECT_EQ(*readQueueDepth(root_ + "/sys", "loop0"), 128u);
  ASSERT_TRUE(writeQueueDepth(root_ + "/sys", "loop0", 32));
  EXPECT_EQ(*readQueueDepth(root_ + "/sys", "loop0"), 32u);
  EXPECT_FALSE(readQueueDepth(root_ + "/sys", "loop9"));
}

TEST(NbdState, RecordsRoundTrip) {
  NbdRecord r;
  r.index = 2;
  r.uid = 1000;
  r.createdUnix = 1700000000;
  r.pid = 4242;
  r.workers = 4;
  r.backingDev = "254:0";
  r.backingInode = 12;
  r.backingFile = "/mnt/a \"b\".img";
  r.directIo = true;
  r.blockSize = 4096;
  r.timeoutSec = 30;
  auto back = nbdRecordsFromJson(nbdRecordsToJson({r}));
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 1u);
  const auto& b = (*back)[0];
  EXPECT_EQ(b.index, 2);
  EXPECT_EQ(b.pid, 4242);
  EXPECT_EQ(b.workers, 4);
  EXPECT_EQ(b.backingFile, r.backingFile);
  EXPECT_TRUE(b.directIo);
  EXPECT_FALSE(nbdRecordsFromJson("[1,2]"));
  // A record that cannot be read is left out (its device is then foreign), with the reason.
  std::vector<std::string> skipped;
  auto bad =
      nbdRecordsFromJson("{\"nbd\": [{\"index\": 1, \"uid\": 0, \"server_pid\": 0}]}", &skipped);
  ASSERT_TRUE(bad);
  EXPECT_TRUE(bad->empty());
  EXPECT_EQ(skipped.size(), 1u);
}

TEST(NbdState, ToleratesOtherVersionsAndKeepsBytes) {
  NbdRecord r;
  r.index = 2;
  r.pid = 4242;
  r.backingFile = "/mnt/\xff\\x41.img";
  std::string text = nbdRecordsToJson({r, r});
  text.replace(text.find("\"version\": 1"), 12, "\"version\": 2, \"extra\": [true]");
  text.replace(text.find("\"workers\""), 0, "\"new_key\": {\"a\": 1}, ");
  text.replace(text.rfind("\"server_pid\": 4242"), 18, "\"server_pid\": -4");
  std::vector<std::string> skipped;
  auto back = nbdRecordsFromJson(text, &skipped);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].backingFile, r.backingFile);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("nbd[1]"), std::string::npos) << skipped[0];
  EXPECT_FALSE(nbdRecordsFromJson(text.substr(0, text.size() / 2))) << "truncated";
}

TEST(NbdState, Names) {
  EXPECT_EQ(*parseNbdName("nbd3"), 3);
  EXPECT_EQ(*parseNbdName("/dev/nbd12"), 12);
  EXPECT_FALSE(parseNbdName("3"));
  EXPECT_FALSE(parseNbdName("loop3"));
  EXPECT_FALSE(parseNbdName("nbd"));
}
