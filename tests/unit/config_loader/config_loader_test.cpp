// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sources/config_loader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace cxiosync {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "cxiosync-config-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string write(const std::string& rel, const std::string& text) {
    fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

  std::string root_;
};

using ConfigLoader = TempDir;

TEST_F(ConfigLoader, MissingDirectoryMeansBuiltInDefaults) {
  auto c = loadConfig(root_ + "/does-not-exist");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->files.empty());
  EXPECT_EQ(c->global.pollInterval, milliseconds(100));
}

TEST_F(ConfigLoader, MainThenDropInsInLexicalOrderOnlyYaml) {
  auto main = write("cxiosync.yaml", "poll_interval_ms: 100\ndry_run: yes\n");
  write("cxiosync.d/20-b.yaml", "poll_interval_ms: 300\n");
  write("cxiosync.d/10-a.yaml", "poll_interval_ms: 200\ndetector: procfs\n");
  write("cxiosync.d/30-c.yml", "poll_interval_ms: bogus\n");        // not *.yaml: ignored
  write("cxiosync.d/40-d.yaml.dpkg-old", "poll_interval_ms: x\n");  // ignored
  write("cxiosync.d/.50-e.yaml", "poll_interval_ms: x\n");          // hidden: ignored
  write("cxiosync.d/README", "not yaml\n");
  fs::create_directories(fs::path(root_) / "cxiosync.d/60-dir.yaml");  // a directory: ignored

  auto files = listConfigFiles(root_);
  ASSERT_TRUE(files) << files.error().message;
  EXPECT_EQ(*files, (std::vector<std::string>{main, root_ + "/cxiosync.d/10-a.yaml",
                                              root_ + "/cxiosync.d/20-b.yaml"}));
  auto c = loadConfig(root_);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->global.pollInterval, milliseconds(300));
  EXPECT_EQ(c->globalSources.pollInterval.describe(), root_ + "/cxiosync.d/20-b.yaml:1");
  EXPECT_EQ(c->global.detector, DetectorKind::Procfs);
  EXPECT_TRUE(c->global.dryRun);
  EXPECT_EQ(c->files, *files);
}

TEST_F(ConfigLoader, DropInsWithoutMainFile) {
  write("cxiosync.d/10-a.yaml", "watch_fsync: on\n");
  auto c = loadConfig(root_);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->global.watchFsync);
}

TEST_F(ConfigLoader, OneBadFileRejectsEverything) {
  write("cxiosync.yaml", "dry_run: yes\n");
  write("cxiosync.d/10-a.yaml", "cgroups:\n  /backup.slice:\n    boost: sometimes\n");
  auto c = loadConfig(root_);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, root_ +
                                   "/cxiosync.d/10-a.yaml:3:12: cgroups./backup.slice.boost: "
                                   "invalid value 'sometimes': expected allow or deny");
  EXPECT_EQ(c.error().code, 0);
}

TEST_F(ConfigLoader, CheckConfigPathFileOrDirectory) {
  auto good = write("good.yaml", "detector: tracefs\n");
  auto bad = write("bad.yaml", "detector: ebpf\n");
  auto g = checkConfigPath(good);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->global.detector, DetectorKind::Tracefs);
  auto b = checkConfigPath(bad);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().message,
            bad + ":1:11: detector: invalid value 'ebpf': expected auto, tracefs or procfs");
  auto missing = checkConfigPath(root_ + "/nope.yaml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENOENT);
  EXPECT_EQ(missing.error().message, root_ + "/nope.yaml: No such file or directory");
  write("cxiosync.yaml", "dry_run: on\n");
  auto dir = checkConfigPath(root_);
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_TRUE(dir->global.dryRun);
}

TEST_F(ConfigLoader, RefusesHugeAndNonRegularFiles) {
  auto big = write("big.yaml", std::string(kMaxConfigFileBytes + 10, '#'));
  auto r = readConfigFile(big);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EFBIG);
  auto d = readConfigFile(root_);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, root_ + ": not a regular file");
  auto n = readConfigFile("/dev/null");
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, "");
}

TEST_F(ConfigLoader, UnitDropInsWithStandardConfPrecedence) {
  const std::vector<std::string> path = {"/etc/systemd/system", "/run/systemd/system",
                                         "/usr/lib/systemd/system"};
  write("usr/lib/systemd/system/user-.slice.d/10-vendor.conf",
        "[X-CxIOSync]\nBoost=deny\nMaxBoostSec=5\n");
  write("usr/lib/systemd/system/user-1000.slice.d/50-masked.conf", "[X-CxIOSync]\nBoost=deny\n");
  write("etc/systemd/system/user-1000.slice.d/50-masked.conf", "");  // masks the vendor file
  write("run/systemd/system/user-1000.slice.d/70-admin.conf",
        "[Slice]\nIOWriteBandwidthMax=/dev/vda 1M\n[X-CxIOSync]\nSyncIsolation=on\n");
  write("etc/systemd/system/user.slice.d/90-parent.conf",
        "[X-CxIOSync]\nBoost=allow\n");  // the parent slice's own dir: not for user-1000.slice
  fs::create_directories(fs::path(root_) / "etc/systemd/system/user-.slice.d");
  fs::create_symlink("/dev/null", fs::path(root_) / "etc/systemd/system/user-.slice.d/20.conf");
  write("usr/lib/systemd/system/user-.slice.d/20.conf", "[X-CxIOSync]\nBoost=bogus\n");

  auto r = loadUnitDropIns("user-1000.slice", root_, path);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->files, (std::vector<std::string>{
                          root_ + "/usr/lib/systemd/system/user-.slice.d/10-vendor.conf",
                          root_ + "/etc/systemd/system/user-.slice.d/20.conf",
                          root_ + "/etc/systemd/system/user-1000.slice.d/50-masked.conf",
                          root_ + "/run/systemd/system/user-1000.slice.d/70-admin.conf"}));
  EXPECT_EQ(r->settings.boost->value, BoostPermission::Deny);
  EXPECT_EQ(r->settings.boost->source.describe(),
            root_ + "/usr/lib/systemd/system/user-.slice.d/10-vendor.conf:2");
  EXPECT_TRUE(r->settings.syncIsolation->value);
  EXPECT_EQ(r->settings.syncIsolation->source.line, 4);

  auto parent = loadUnitDropIns("user.slice", root_, path);
  ASSERT_TRUE(parent) << parent.error().message;
  EXPECT_EQ(parent->settings.boost->value, BoostPermission::Allow);
  EXPECT_FALSE(parent->settings.maxBoost);  // user-.slice.d is not for user.slice

  auto none = loadUnitDropIns("other.slice", root_, path);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->files.empty());
  EXPECT_TRUE(none->settings.empty());

  EXPECT_FALSE(loadUnitDropIns("not a unit", root_, path));
}

TEST_F(ConfigLoader, UnitDropInErrorNamesFileAndLine) {
  const std::vector<std::string> path = {"/etc/systemd/system"};
  write("etc/systemd/system/backup.slice.d/70-cxiosync.conf", "[X-CxIOSync]\n\nBoost=maybe\n");
  auto r = loadUnitDropIns("backup.slice", root_, path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, root_ +
                                   "/etc/systemd/system/backup.slice.d/70-cxiosync.conf:3: "
                                   "[X-CxIOSync] Boost: invalid value 'maybe': expected allow or "
                                   "deny");
}

TEST_F(ConfigLoader, DropInFilesFromSystemdOrder) {
  auto a = write("a.conf", "[X-CxIOSync]\nBoost=deny\n");
  auto b = write("b.conf", "[Service]\nExecStart=/bin/true\n");
  auto r = loadDropInFiles({a, b});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->settings.boost->value, BoostPermission::Deny);
  auto missing = loadDropInFiles({root_ + "/gone.conf"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENOENT);
}

}  // namespace
}  // namespace cxiosync
