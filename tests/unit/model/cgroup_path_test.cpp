// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/model/cgroup_path.h"

#include <gtest/gtest.h>

#include <string>

namespace cxiosync {
namespace {

CgroupPath P(std::string_view s) {
  auto r = CgroupPath::parse(s);
  EXPECT_TRUE(r.ok()) << s;
  return r.ok() ? *r : CgroupPath();
}

TEST(CgroupPath, RootSpellings) {
  for (const char* s : {"", "/", "//", "///"}) {
    auto p = CgroupPath::parse(s);
    ASSERT_TRUE(p.ok()) << s;
    EXPECT_TRUE(p->isRoot()) << s;
    EXPECT_EQ(p->relative(), "");
    EXPECT_EQ(p->display(), "/");
  }
  EXPECT_TRUE(CgroupPath().isRoot());
}

TEST(CgroupPath, Normalizes) {
  EXPECT_EQ(P("/a/b").relative(), "a/b");
  EXPECT_EQ(P("a/b/").relative(), "a/b");
  EXPECT_EQ(P("a//b").relative(), "a/b");
  EXPECT_EQ(P("//system.slice///cron.service//").relative(), "system.slice/cron.service");
  EXPECT_EQ(P("/a/b").display(), "/a/b");
  EXPECT_EQ(P("a//b"), P("/a/b/"));
}

TEST(CgroupPath, AcceptsOddButLegalNames) {
  EXPECT_EQ(P("/a b/c").relative(), "a b/c");
  EXPECT_EQ(P("/...").relative(), "...");
  EXPECT_EQ(P("/.hidden/..x").relative(), ".hidden/..x");
  EXPECT_EQ(P("/dev-disk-by\\x2duuid.swap").relative(), "dev-disk-by\\x2duuid.swap");
  EXPECT_EQ(P("/\xc3\xa9t\xc3\xa9").relative(), "\xc3\xa9t\xc3\xa9");
}

TEST(CgroupPath, RejectsEscapesAndGarbage) {
  using namespace std::string_literals;
  for (const std::string& bad :
       std::initializer_list<std::string>{"/..", "..", "/a/../b", "a/..", "/.", "./a", "a/./b",
                                          "/a\0b"s, "\0"s, "/a\nb", "/a\tb", "/a\x7f", "/\x01"}) {
    auto r = CgroupPath::parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_FALSE(r.error().message.empty());
    }
  }
}

TEST(CgroupPath, RejectsOverlongNamesAndPaths) {
  std::string name255(CgroupPath::kMaxNameLength, 'x');
  EXPECT_TRUE(CgroupPath::parse("/" + name255).ok());
  EXPECT_FALSE(CgroupPath::parse("/" + name255 + "x").ok());

  std::string longPath;
  while (longPath.size() + 2 <= CgroupPath::kMaxPathLength) longPath += "/a";
  EXPECT_TRUE(CgroupPath::parse(longPath).ok());
  EXPECT_FALSE(CgroupPath::parse(longPath + "/bb").ok());
  EXPECT_FALSE(CgroupPath::parse(std::string(1 << 20, '/')).ok());
}

TEST(CgroupPath, Parent) {
  EXPECT_EQ(P("/a/b/c").parent(), P("/a/b"));
  EXPECT_EQ(P("/a").parent(), CgroupPath());
  EXPECT_EQ(CgroupPath().parent(), CgroupPath());
}

TEST(CgroupPath, AncestorsAndSelfRootFirst) {
  auto chain = P("/a/b/c").ancestorsAndSelf();
  ASSERT_EQ(chain.size(), 4u);
  EXPECT_EQ(chain[0], CgroupPath());
  EXPECT_EQ(chain[1], P("a"));
  EXPECT_EQ(chain[2], P("a/b"));
  EXPECT_EQ(chain[3], P("a/b/c"));
  auto rootChain = CgroupPath().ancestorsAndSelf();
  ASSERT_EQ(rootChain.size(), 1u);
  EXPECT_TRUE(rootChain[0].isRoot());
}

TEST(CgroupPath, AncestorRelationRespectsComponentBoundaries) {
  EXPECT_TRUE(CgroupPath().isAncestorOrSelfOf(P("/a/b")));
  EXPECT_TRUE(CgroupPath().isAncestorOrSelfOf(CgroupPath()));
  EXPECT_TRUE(P("/a").isAncestorOrSelfOf(P("/a")));
  EXPECT_TRUE(P("/a").isAncestorOrSelfOf(P("/a/b")));
  EXPECT_TRUE(P("/a/b").isAncestorOrSelfOf(P("/a/b/c/d")));
  EXPECT_FALSE(P("/a").isAncestorOrSelfOf(P("/ab")));
  EXPECT_FALSE(P("/a/b").isAncestorOrSelfOf(P("/a")));
  EXPECT_FALSE(P("/a").isAncestorOrSelfOf(CgroupPath()));
  EXPECT_FALSE(P("/a/b").isAncestorOrSelfOf(P("/a/c")));
}

TEST(CgroupPath, OrderingIsTotalAndUsableAsMapKey) {
  EXPECT_LT(CgroupPath(), P("/a"));
  EXPECT_LT(P("/a"), P("/b"));
  EXPECT_NE(P("/a"), P("/a/b"));
}

}  // namespace
}  // namespace cxiosync
