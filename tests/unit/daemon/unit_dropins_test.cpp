// SPDX-License-Identifier: GPL-2.0-or-later
// The [X-CxIOSync] drop-in layer: lookup through a finder, lazy tracking, refresh, errors that
// keep the previous settings; the standard-conf finder on a temp root; inotify on the search
// path; and the daemon applying a drop-in (and an edit of it) to its policy.
#include "daemon/sources/unit_dropins.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "daemon/core/daemon.h"
#include "daemon/sources/dropin_watch.h"
#include "daemon/sources/systemd_dropins.h"
#include "policy/config/defaults.h"
#include "test_util.h"

namespace cxiosync {
namespace {

using namespace cxiosync::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::vector<std::string> kSearchPath = {"/etc/systemd/system", "/usr/lib/systemd/system"};

void put(const TempDir& root, const std::string& rel, const std::string& text) {
  fs::create_directories(fs::path(root.file(rel)).parent_path());
  writeFile(root.file(rel), text);
}

TEST(SearchPathDropInFinder, FindsTheUnitOfACgroupAndItsFilesInSystemdOrder) {
  TempDir root;
  put(root, "etc/systemd/system/backup.slice.d/70-cxiosync.conf", "[X-CxIOSync]\nBoost=deny\n");
  put(root, "usr/lib/systemd/system/backup.slice.d/10-vendor.conf", "[Slice]\nCPUWeight=10\n");
  // Same name in /etc masks the vendor file.
  put(root, "usr/lib/systemd/system/backup.slice.d/70-cxiosync.conf", "[X-CxIOSync]\nBoost=\n");
  SearchPathDropInFinder finder(root.path(), kSearchPath);

  auto f = finder.find(cg("/backup.slice"));
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_TRUE(f->has_value());
  EXPECT_EQ((*f)->unit, "backup.slice");
  EXPECT_EQ((*f)->files, (std::vector<std::string>{
                             root.file("usr/lib/systemd/system/backup.slice.d/10-vendor.conf"),
                             root.file("etc/systemd/system/backup.slice.d/70-cxiosync.conf")}));

  auto rootSlice = finder.find(CgroupPath{});
  ASSERT_TRUE(rootSlice && rootSlice->has_value());
  EXPECT_EQ((*rootSlice)->unit, "-.slice");
  EXPECT_TRUE((*rootSlice)->files.empty());

  // Inside a unit (a delegated subtree): no unit of its own.
  auto inside = finder.find(cg("/system.slice/docker.service/payload"));
  ASSERT_TRUE(inside);
  EXPECT_FALSE(inside->has_value());
}

// The object path GetUnitByControlGroup's answer is compared with (systemd's bus_label_escape).
TEST(SystemdDropInFinder, UnitObjectPathsAreEscapedLikeSystemdDoes) {
  EXPECT_EQ(unitObjectPath("backup.slice"), "/org/freedesktop/systemd1/unit/backup_2eslice");
  EXPECT_EQ(unitObjectPath("-.slice"), "/org/freedesktop/systemd1/unit/_2d_2eslice");
  EXPECT_EQ(unitObjectPath("run-u16.service"),
            "/org/freedesktop/systemd1/unit/run_2du16_2eservice");
  EXPECT_EQ(unitObjectPath("getty@tty1.service"),
            "/org/freedesktop/systemd1/unit/getty_40tty1_2eservice");
}

// A finder whose answers the test sets; counts the questions.
class FakeFinder : public UnitDropInFinder {
 public:
  std::map<std::string, UnitDropInList> units;  // cgroup display path -> unit
  std::optional<Error> failure;
  int calls = 0;
  std::string_view name() const override { return "fake"; }
  Result<std::optional<UnitDropInList>> find(const CgroupPath& c) override {
    ++calls;
    if (failure) return *failure;
    auto it = units.find(c.display());
    if (it == units.end()) return std::optional<UnitDropInList>{};
    return std::optional<UnitDropInList>{it->second};
  }
};

struct LayerFixture {
  TempDir dir;
  FakeFinder* finder = nullptr;
  std::unique_ptr<DropInLayer> layer;
  std::string file;
  LayerFixture() {
    auto f = std::make_unique<FakeFinder>();
    finder = f.get();
    file = dir.file("70-cxiosync.conf");
    writeFile(file, "[Slice]\nCPUWeight=5\n\n[X-CxIOSync]\nBoost=deny\nMaxBoostSec=10s\n");
    finder->units["/backup.slice"] = UnitDropInList{"backup.slice", {file}};
    layer = std::make_unique<DropInLayer>(std::move(f));
  }
};

TEST(DropInLayer, TracksACgroupWithItsAncestorsOnceAndKeepsFileAndLine) {
  LayerFixture fx;
  const TimePoint t0{};
  EXPECT_TRUE(fx.layer->track(cg("/backup.slice/job.service"), t0));
  EXPECT_EQ(fx.finder->calls, 3);  // /, /backup.slice, /backup.slice/job.service
  EXPECT_FALSE(fx.layer->track(cg("/backup.slice/job.service"), t0 + 1s));
  EXPECT_FALSE(fx.layer->track(cg("/backup.slice"), t0 + 1s));
  EXPECT_EQ(fx.finder->calls, 3);

  ASSERT_EQ(fx.layer->layer().size(), 1u);
  const PolicySettings& s = fx.layer->layer().at(cg("/backup.slice"));
  ASSERT_TRUE(s.boost);
  EXPECT_EQ(s.boost->value, BoostPermission::Deny);
  EXPECT_EQ(s.boost->source.describe(), fx.file + ":5");
  ASSERT_TRUE(s.maxBoost);
  EXPECT_EQ(s.maxBoost->value, 10s);
  EXPECT_EQ(describeDropInSettings(s), "Boost=deny MaxBoostSec=10s");

  // The resolver gives the drop-in's value to the slice's children, with the file:line.
  PolicyLayers layers;
  layers.defaults = builtinPolicyDefaults();
  layers.dropIn = fx.layer->layer();
  PolicyResolver resolver(layers);
  auto p = resolver.resolve(cg("/backup.slice/job.service"));
  EXPECT_EQ(p.boost.value, BoostPermission::Deny);
  EXPECT_EQ(p.boost.source.kind, ValueSource::Kind::DropIn);
  EXPECT_EQ(p.boost.source.describe(), fx.file + ":5");
}

TEST(DropInLayer, RefreshSeesEditsAndABrokenFileKeepsThePreviousSettings) {
  LayerFixture fx;
  const TimePoint t0{};
  fx.layer->track(cg("/backup.slice"), t0);
  writeFile(fx.file, "[X-CxIOSync]\nBoost=allow\n");
  EXPECT_TRUE(fx.layer->refreshAll(t0 + 1s));
  EXPECT_EQ(fx.layer->layer().at(cg("/backup.slice")).boost->value, BoostPermission::Allow);
  EXPECT_FALSE(fx.layer->refreshAll(t0 + 2s));  // nothing changed

  writeFile(fx.file, "[X-CxIOSync]\nBoost=perhaps\n");
  EXPECT_FALSE(fx.layer->refreshAll(t0 + 3s));
  EXPECT_EQ(fx.layer->layer().at(cg("/backup.slice")).boost->value, BoostPermission::Allow);

  // Removing the section removes the settings.
  writeFile(fx.file, "[Slice]\nCPUWeight=5\n");
  EXPECT_TRUE(fx.layer->refreshAll(t0 + 4s));
  EXPECT_TRUE(fx.layer->layer().empty());
}

TEST(DropInLayer, AFinderFailureKeepsSettingsBacksOffAndUpkeepAsksAgain) {
  LayerFixture fx;
  const TimePoint t0{};
  fx.layer->track(cg("/backup.slice"), t0);
  fx.finder->failure = makeError("systemd is reloading", ETIMEDOUT);
  int calls = fx.finder->calls;
  EXPECT_FALSE(fx.layer->refreshAll(t0 + 1s));
  EXPECT_EQ(fx.finder->calls, calls + 1);  // the first failure stops the questions
  EXPECT_EQ(fx.layer->layer().at(cg("/backup.slice")).boost->value, BoostPermission::Deny);

  // A cgroup first seen during the back-off is not asked about (each question to a reloading
  // systemd would wait for the call timeout) and gets its drop-ins at the next upkeep.
  fx.finder->units["/other.slice"] = UnitDropInList{"other.slice", {fx.file}};
  EXPECT_FALSE(fx.layer->track(cg("/other.slice"), t0 + 2s));
  EXPECT_EQ(fx.finder->calls, calls + 1);
  EXPECT_FALSE(fx.layer->layer().count(cg("/other.slice")));
  fx.finder->failure.reset();
  calls = fx.finder->calls;
  EXPECT_FALSE(fx.layer->maintain(t0 + 1s + DropInLayer::kFinderBackoff / 2));
  EXPECT_EQ(fx.finder->calls, calls);  // still backing off
  EXPECT_TRUE(fx.layer->maintain(t0 + 2s + DropInLayer::kFinderBackoff));
  EXPECT_EQ(fx.finder->calls, calls + 3);  // the three pending lookups, nothing else
  EXPECT_TRUE(fx.layer->layer().count(cg("/other.slice")));

  // An explicit refresh (systemd's Reloading(false), an edited file) ends a back-off at once.
  fx.finder->failure = makeError("systemd is reloading", EAGAIN);
  EXPECT_FALSE(fx.layer->refreshAll(t0 + 20s));
  fx.finder->failure.reset();
  writeFile(fx.file, "[X-CxIOSync]\nBoost=allow\n");
  EXPECT_TRUE(fx.layer->refreshAll(t0 + 21s));
  EXPECT_EQ(fx.layer->layer().at(cg("/other.slice")).boost->value, BoostPermission::Allow);
}

TEST(DropInLayer, ForgetsUnusedCgroupsButKeepsAncestorsOfUsedOnes) {
  LayerFixture fx;
  const TimePoint t0{};
  fx.layer->track(cg("/backup.slice/job.service"), t0);
  // Only the child is used from now on; the slice's drop-ins must stay (inherited).
  fx.layer->track(cg("/backup.slice/job.service"), t0 + DropInLayer::kForgetAfter);
  EXPECT_FALSE(fx.layer->maintain(t0 + DropInLayer::kForgetAfter + 1s));
  EXPECT_TRUE(fx.layer->layer().count(cg("/backup.slice")));
  // Nothing used any more: forgotten.
  EXPECT_TRUE(fx.layer->maintain(t0 + 2 * DropInLayer::kForgetAfter + 2s));
  EXPECT_TRUE(fx.layer->layer().empty());
}

TEST(DropInWatch, SeesConfFilesInDropInDirectoriesOldAndNew) {
  TempDir root;
  put(root, "etc/systemd/system/backup.slice.d/10-a.conf", "");
  auto w = DropInWatch::open(root.path(), kSearchPath);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w.value()->watchCount(), 2u);  // /etc/systemd/system and backup.slice.d
  EXPECT_FALSE(w.value()->onReadable());

  writeFile(root.file("etc/systemd/system/backup.slice.d/.70-x.conf.swp"), "x");
  writeFile(root.file("etc/systemd/system/backup.slice.d/notes.txt"), "x");
  EXPECT_FALSE(w.value()->onReadable());
  writeFile(root.file("etc/systemd/system/backup.slice.d/70-cxiosync.conf"), "x");
  EXPECT_TRUE(w.value()->onReadable());

  fs::create_directories(root.file("etc/systemd/system/new.slice.d"));
  EXPECT_TRUE(w.value()->onReadable());
  writeFile(root.file("etc/systemd/system/new.slice.d/70-cxiosync.conf"), "x");
  EXPECT_TRUE(w.value()->onReadable());

  // A search-path directory created later counts after rewatch().
  put(root, "usr/lib/systemd/system/vendor.slice.d/10-v.conf", "");
  w.value()->rewatch();
  writeFile(root.file("usr/lib/systemd/system/vendor.slice.d/10-v.conf"), "y");
  EXPECT_TRUE(w.value()->onReadable());
}

TEST(DaemonDropIns, TheDaemonAppliesAndReReadsASliceDropIn) {
  TempDir cgroups, run, units;
  fs::create_directories(cgroups.file("backup.slice/job.service"));
  const std::string file = units.file("etc/systemd/system/backup.slice.d/70-cxiosync.conf");
  put(units, "etc/systemd/system/backup.slice.d/70-cxiosync.conf",
      "[X-CxIOSync]\nSyncIsolation=off\n");
  DaemonSettings o;
  o.cgroupRoot = cgroups.path();
  o.runDir = run.path();
  o.tracefsRoot = "/nonexistent";
  o.detector = DetectorKind::Procfs;
  o.configPath = "/nonexistent";
  o.unitRoot = units.path();
  o.assumeShutdown = ShutdownOverride::No;
  auto d = Daemon::create(o, Config{builtinGlobalSettings(), {}, {}, {}});
  ASSERT_TRUE(d) << d.error().message;
  Daemon& daemon = *d.value();

  // Before anything asked for it, the slice's drop-in is not loaded; `show` loads it.
  daemon.trackPolicyOf(cg("/backup.slice/job.service"));
  auto p = daemon.resolver().resolve(cg("/backup.slice/job.service"));
  EXPECT_FALSE(p.syncIsolation.value);
  EXPECT_EQ(p.syncIsolation.source.describe(), file + ":2");

  // Editing the file reaches the policy through inotify (debounced) while the loop runs.
  bool changed = false;
  ASSERT_TRUE(daemon.loop().addTimer(
      100ms, 0ns, [&] { writeFile(file, "[X-CxIOSync]\nSyncIsolation=on\nBoost=deny\n"); }));
  ASSERT_TRUE(daemon.loop().addTimer(50ms, 50ms, [&] {
    auto q = daemon.resolver().resolve(cg("/backup.slice/job.service"));
    if (q.syncIsolation.value && q.boost.value == BoostPermission::Deny) {
      changed = true;
      daemon.loop().exit(0);
    }
  }));
  ASSERT_TRUE(daemon.loop().addTimer(5s, 0ns, [&] { daemon.loop().exit(1); }));
  // run() recovers, sets up the sources (the drop-in watch among them), READY=1, loops.
  EXPECT_EQ(daemon.run(), 0);
  EXPECT_TRUE(changed) << "the edited drop-in never reached the policy";
  auto q = daemon.resolver().resolve(cg("/backup.slice/job.service"));
  EXPECT_EQ(q.boost.source.describe(), file + ":3");
}

}  // namespace
}  // namespace cxiosync
