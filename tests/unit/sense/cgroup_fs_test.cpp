// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/kernel/cgroup_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include "tests/unit/sense/fake_tree.h"

namespace cxiosync {
namespace {

using testing::FakeTree;

class CgroupFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tree.file("cgroup.controllers", "cpuset cpu io memory pids\n");
    tree.file("cg1/cgroup.controllers", "io memory\n");
    tree.file("cg1/io.max", "8:0 rbps=max wbps=1048576 riops=max wiops=max\n");
    tree.file("cg1/io.stat", "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n7:0 \n");
    tree.file("cg1/memory.stat", "anon 0\nfile 100\nfile_dirty 8388608\nfile_writeback 4096\n");
    tree.file("cg1/cgroup.events", "populated 1\nfrozen 0\n");
    tree.file("cg2/cgroup.controllers", "\n");  // no io/memory: files absent
    tree.dir("cg1/child");
    tree.file("cg1/child/cgroup.controllers", "\n");
    auto fs = CgroupFs::open(tree.root());
    ASSERT_TRUE(fs.ok()) << fs.error().message;
    cg = std::move(*fs);
  }
  CgroupPath path(const char* p) { return *CgroupPath::parse(p); }
  FakeTree tree;
  std::unique_ptr<CgroupFs> cg;
};

TEST_F(CgroupFsTest, ReadsControlFiles) {
  auto dir = cg->openDir(path("/cg1"));
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  EXPECT_EQ(dir->inode(), tree.inode("cg1"));
  auto io = cg->readIoMax(*dir);
  ASSERT_TRUE(io.ok()) << io.error().message;
  ASSERT_TRUE(io->has_value());
  ASSERT_EQ((*io)->size(), 1u);
  EXPECT_EQ((**io)[0].dev, (DevNum{8, 0}));
  EXPECT_EQ((**io)[0].limits.wbps, std::optional<uint64_t>(1048576));
  auto mem = cg->readMemoryStat(*dir);
  ASSERT_TRUE(mem.ok() && mem->has_value());
  EXPECT_EQ((*mem)->fileDirty(), 8388608u);
  EXPECT_EQ((*mem)->fileWriteback(), 4096u);
  auto ev = cg->readCgroupEvents(*dir);
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->populated);
  auto st = cg->readIoStat(*dir);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->size(), 2u);
}

TEST_F(CgroupFsTest, MissingControllerFileIsNotAnError) {
  auto dir = cg->openDir(path("/cg2"));
  ASSERT_TRUE(dir.ok());
  auto io = cg->readIoMax(*dir);
  ASSERT_TRUE(io.ok()) << io.error().message;
  EXPECT_FALSE(io->has_value());
  auto mem = cg->readMemoryStat(*dir);
  ASSERT_TRUE(mem.ok());
  EXPECT_FALSE(mem->has_value());
}

TEST_F(CgroupFsTest, RootOpensAndListsChildren) {
  auto root = cg->openDir(CgroupPath{});
  ASSERT_TRUE(root.ok()) << root.error().message;
  EXPECT_EQ(root->inode(), tree.inode(""));
  auto kids = cg->listChildren(*root);
  ASSERT_TRUE(kids.ok());
  EXPECT_EQ(*kids, (std::vector<std::string>{"cg1", "cg2"}));
  auto io = cg->readIoMax(*root);  // the root cgroup has no io.max
  ASSERT_TRUE(io.ok());
  EXPECT_FALSE(io->has_value());
}

TEST_F(CgroupFsTest, AbsentCgroupIsGone) {
  auto dir = cg->openDir(path("/nope"));
  ASSERT_FALSE(dir.ok());
  EXPECT_TRUE(isGone(dir.error()));
  EXPECT_NE(dir.error().message.find("nope"), std::string::npos) << dir.error().message;
  auto ino = cg->inodeOf(path("/nope/deeper"));
  ASSERT_FALSE(ino.ok());
  EXPECT_TRUE(isGone(ino.error()));
}

TEST_F(CgroupFsTest, CgroupRemovedWhileOpenIsGone) {
  auto dir = cg->openDir(path("/cg1/child"));
  ASSERT_TRUE(dir.ok());
  tree.remove("cg1/child");
  auto io = cg->readIoMax(*dir);
  ASSERT_FALSE(io.ok());
  EXPECT_TRUE(isGone(io.error())) << io.error().message;
  auto mem = cg->readMemoryStat(*dir);
  ASSERT_FALSE(mem.ok());
  EXPECT_TRUE(isGone(mem.error()));
  auto kids = cg->listChildren(*dir);
  // An unlinked directory lists empty or fails as gone; never a hard failure.
  EXPECT_TRUE(kids.ok() ? kids->empty() : isGone(kids.error()));
}

TEST_F(CgroupFsTest, RecreatedCgroupIsNotConfusedWithTheOld) {
  auto dir = cg->openDir(path("/cg1/child"));
  ASSERT_TRUE(dir.ok());
  const uint64_t oldIno = dir->inode();
  tree.remove("cg1/child");
  tree.file("cg1/other-to-shift-inodes", "x");
  tree.file("cg1/child/cgroup.controllers", "io\n");
  tree.file("cg1/child/io.max", "");
  ASSERT_NE(tree.inode("cg1/child"), oldIno);
  // The old handle still refers to the removed cgroup.
  EXPECT_FALSE(cg->readIoMax(*dir).ok());
  auto again = cg->openDirExpecting(path("/cg1/child"), oldIno);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ESTALE);
  EXPECT_TRUE(isGone(again.error()));
  IoMaxEntry e{DevNum{8, 0}, IoLimits{std::nullopt, 2097152, std::nullopt, std::nullopt}};
  auto w = cg->writeIoMax(path("/cg1/child"), e, oldIno);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ESTALE);
  EXPECT_EQ(tree.read("cg1/child/io.max"), "");  // nothing written to the new cgroup
  EXPECT_TRUE(cg->writeIoMax(path("/cg1/child"), e, tree.inode("cg1/child")).ok());
}

TEST_F(CgroupFsTest, SymlinkedCgroupDirectoryIsRefused) {
  FakeTree outside;
  outside.file("io.max", "8:0 wbps=1\n");
  outside.file("cgroup.controllers", "io\n");
  tree.symlink(outside.root(), "escape");
  auto dir = cg->openDir(path("/escape"));
  ASSERT_FALSE(dir.ok());
  EXPECT_FALSE(isGone(dir.error()));  // refused, not "gone"
  // A symlink in the middle of the path is refused too.
  tree.symlink(outside.root(), "cg1/mid");
  EXPECT_FALSE(cg->openDir(path("/cg1/mid")).ok());
  // A relative link that climbs out of the root.
  tree.symlink("../..", "cg1/up");
  EXPECT_FALSE(cg->openDir(path("/cg1/up")).ok());
  // Writing through a symlinked directory never reaches the outside file.
  IoMaxEntry e{DevNum{8, 0}, IoLimits{std::nullopt, kUnlimited, std::nullopt, std::nullopt}};
  EXPECT_FALSE(cg->writeIoMax(path("/escape"), e).ok());
  EXPECT_EQ(outside.read("io.max"), "8:0 wbps=1\n");
}

TEST_F(CgroupFsTest, SymlinkedControlFileIsRefused) {
  FakeTree outside;
  outside.file("secret", "8:0 wbps=1\n");
  tree.file("cg3/cgroup.controllers", "io\n");
  tree.symlink(outside.path("secret"), "cg3/io.max");
  auto dir = cg->openDir(path("/cg3"));
  ASSERT_TRUE(dir.ok());
  auto io = cg->readIoMax(*dir);
  ASSERT_FALSE(io.ok());
  EXPECT_EQ(io.error().code, ELOOP) << io.error().message;
  IoMaxEntry e{DevNum{8, 0}, IoLimits{std::nullopt, kUnlimited, std::nullopt, std::nullopt}};
  EXPECT_FALSE(cg->writeIoMax(*dir, e).ok());
  EXPECT_EQ(outside.read("secret"), "8:0 wbps=1\n");
}

TEST_F(CgroupFsTest, WriteIoMaxWritesOneLineAndReadsBack) {
  tree.file("cg2/io.max", "");
  IoMaxEntry e{DevNum{254, 0}, IoLimits{std::nullopt, 4194304, std::nullopt, std::nullopt}};
  auto dir = cg->openDir(path("/cg2"));
  ASSERT_TRUE(dir.ok());
  auto r = cg->writeIoMax(*dir, e);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(tree.read("cg2/io.max"), "254:0 wbps=4194304\n");
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->limits.wbps, std::optional<uint64_t>(4194304));
}

// Issue 16, L1: one key a later kernel adds to io.max failed the parse, so the cgroup's limits
// vanished from the snapshot and every restore failed forever. The limits read as before, and
// a write (a restore's patch) names only the key it changes; the kernel keeps the others.
TEST_F(CgroupFsTest, IoMaxWithAKeyOfALaterKernel) {
  tree.file("cg2/io.max", "8:0 rbps=max wbps=max riops=max wiops=max latency=5\n");
  auto dir = cg->openDir(path("/cg2"));
  ASSERT_TRUE(dir.ok());
  auto io = cg->readIoMax(*dir);
  ASSERT_TRUE(io.ok()) << io.error().message;
  ASSERT_TRUE(io->has_value());
  ASSERT_EQ((*io)->size(), 1u);
  EXPECT_EQ((**io)[0].limits.wbps, std::optional<uint64_t>(kUnlimited));
  ASSERT_EQ((**io)[0].otherKeys.size(), 1u);
  EXPECT_EQ((**io)[0].otherKeys[0].first, "latency");
  // A plain file is not kernfs: what a write does not cover stays. Empty it to see the bytes.
  tree.file("cg2/io.max", "");
  IoMaxEntry patch = (**io)[0];
  patch.limits = IoLimits{std::nullopt, 1048576, std::nullopt, std::nullopt};
  auto r = cg->writeIoMax(*dir, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(tree.read("cg2/io.max"), "8:0 wbps=1048576\n");
}

// A kernel that keeps its own value (e.g. clamps, or a concurrent writer won).
class StubbornCgroupFs : public CgroupFs {
 public:
  using CgroupFs::CgroupFs;
  Result<std::optional<std::vector<IoMaxEntry>>> readIoMax(const CgroupDir&) const override {
    return std::optional<std::vector<IoMaxEntry>>(std::vector<IoMaxEntry>{
        IoMaxEntry{DevNum{254, 0}, IoLimits{kUnlimited, 7, kUnlimited, kUnlimited}}});
  }
};

TEST_F(CgroupFsTest, WriteIoMaxDetectsAReadBackMismatch) {
  tree.file("cg2/io.max", "");
  StubbornCgroupFs fs(UniqueFd(::open(tree.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
                      tree.root());
  IoMaxEntry e{DevNum{254, 0}, IoLimits{std::nullopt, 1048576, std::nullopt, std::nullopt}};
  auto r = fs.writeIoMax(path("/cg2"), e);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, EIO);
  EXPECT_NE(r.error().message.find("read back"), std::string::npos) << r.error().message;
}

TEST(IoMaxReadBack, ComparesOnlyWrittenKeys) {
  IoMaxEntry w{DevNum{8, 0}, IoLimits{std::nullopt, 100, std::nullopt, std::nullopt}};
  IoMaxEntry a{DevNum{8, 0}, IoLimits{kUnlimited, 100, kUnlimited, kUnlimited}};
  EXPECT_TRUE(ioMaxReadsBackAs(w, a));
  a.limits.wbps = 200;
  EXPECT_FALSE(ioMaxReadsBackAs(w, a));
  // Lifting every key makes the kernel drop the line: absent reads as all max.
  IoMaxEntry lift{DevNum{8, 0}, IoLimits{std::nullopt, kUnlimited, std::nullopt, kUnlimited}};
  EXPECT_TRUE(ioMaxReadsBackAs(lift, std::nullopt));
  EXPECT_FALSE(ioMaxReadsBackAs(w, std::nullopt));
}

}  // namespace
}  // namespace cxiosync
