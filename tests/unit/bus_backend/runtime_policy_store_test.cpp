// SPDX-License-Identifier: GPL-2.0-or-later
// The runtime policy layer's files (daemon/sources/runtime_policy_store.h) and the daemon flags
// that place them (--state-dir, --bus).
#include "daemon/sources/runtime_policy_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "daemon/app/options.h"

namespace cxiosync {
namespace {

namespace fs = std::filesystem;

CgroupPath P(const char* s) {
  return *CgroupPath::parse(s);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("rps-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string state() const { return (dir_ / "state").string(); }
  std::string run() const { return (dir_ / "run").string(); }
  fs::path dir_;
};

TEST(RuntimePolicyFormat, RoundTripsAndValidates) {
  RuntimeEntries e;
  e[P("/cg2")]["sync_isolation"] = "on";
  e[P("/a/b")]["boost"] = "deny";
  e[P("/a/b")]["boost_ceiling"] = "10485760";
  std::string text = serializeRuntimePolicy(e);
  EXPECT_NE(text.find("\"version\": 1"), std::string::npos) << text;
  auto back = parseRuntimePolicy(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, e);
  auto layer = runtimeLayerOf(e);
  ASSERT_TRUE(layer.count(P("/cg2")));
  ASSERT_TRUE(layer[P("/cg2")].syncIsolation);
  EXPECT_TRUE(layer[P("/cg2")].syncIsolation->value);
  EXPECT_EQ(layer[P("/cg2")].syncIsolation->source.describe(), "runtime");
  EXPECT_EQ(layer[P("/a/b")].boostCeiling->value.bytesPerSecond, 10485760u);

  for (const char* bad : {"", "[]", "{\"cgroups\":{}}", "{\"version\":0,\"cgroups\":{}}",
                          "{\"version\":1,\"cgroups\":[]}", "{\"version\":1,"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parseRuntimePolicy(bad));
  }
  EXPECT_TRUE(parseRuntimePolicy("{\"version\":1}"));
}

// runtime-policy.json exactly as the daemon wrote it before nlohmann-json.
TEST(RuntimePolicyFormat, ReadsTodaysFormatIdentically) {
  const std::string today = R"({
  "version": 1,
  "cgroups": {
    "/a/b": {
      "boost": "deny",
      "boost_ceiling": "10485760"
    },
    "/cg2": {
      "sync_isolation": "on"
    }
  }
}
)";
  auto back = parseRuntimePolicy(today);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[P("/a/b")]["boost_ceiling"], "10485760");
  EXPECT_EQ(serializeRuntimePolicy(*back), today);
}

TEST(RuntimePolicyFormat, ToleratesOtherVersionsAndSkipsWhatItCannotRead) {
  std::vector<std::string> skipped;
  auto back = parseRuntimePolicy(
      R"({"version":3,"written_by":"x","cgroups":{
           "/ok":{"boost":"deny","future_knob":"7","sync_isolation":["on"]},
           "/../x":{"boost":"deny"},
           "/num":{"boost_ceiling":1048576},
           "/bad":"deny",
           "/caf\u00e9\\xff":{"boost":"deny"}}})",
      &skipped);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[P("/ok")], (std::map<std::string, std::string>{{"boost", "deny"}}));
  EXPECT_EQ((*back)[P("/num")]["boost_ceiling"], "1048576") << "a hand-edited number";
  EXPECT_TRUE(back->count(P("/caf\xc3\xa9\xff"))) << "cgroup names are bytes";
  EXPECT_EQ(skipped.size(), 4u);  // future_knob, sync_isolation, /../x, /bad

  RuntimeEntries e;
  e[P("/caf\xc3\xa9\xff\\x41")]["boost"] = "deny";
  auto again = parseRuntimePolicy(serializeRuntimePolicy(e));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, e);
}

TEST_F(StoreTest, EntriesThatCannotBeReadAreSkippedAndTheFileKept) {
  fs::create_directories(dir_ / "state");
  const std::string text =
      "{\"version\":2,\"cgroups\":{\"/a\":{\"boost\":\"deny\"},\"/b\":{\"boost\":\"maybe\"}}}";
  std::ofstream(dir_ / "state/runtime-policy.json") << text;
  RuntimePolicyStore s(state(), run());
  auto rep = s.load();
  EXPECT_EQ(rep.persistent, 1u);
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_NE(rep.problems[0].find("\"/b\""), std::string::npos) << rep.problems[0];
  EXPECT_TRUE(s.has(P("/a")));
  EXPECT_TRUE(fs::exists(dir_ / "state/runtime-policy.json")) << "still in use";
  size_t copies = 0;
  for (const auto& f : fs::directory_iterator(dir_ / "state"))
    if (f.path().filename().string().starts_with("runtime-policy.json.corrupt-")) {
      ++copies;
      EXPECT_EQ(slurp(f.path()), text);
    }
  EXPECT_EQ(copies, 1u);
}

TEST_F(StoreTest, TruncatedFileIsMovedAside) {
  RuntimeEntries e;
  e[P("/a")]["boost"] = "deny";
  const std::string text = serializeRuntimePolicy(e);
  fs::create_directories(dir_ / "state");
  std::ofstream(dir_ / "state/runtime-policy.json") << text.substr(0, text.size() - 5);
  RuntimePolicyStore s(state(), run());
  auto rep = s.load();
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_NE(rep.problems[0].find("moved aside"), std::string::npos) << rep.problems[0];
  EXPECT_TRUE(s.layer().empty());
}

TEST_F(StoreTest, PersistentAndRuntimeFilesAndPrecedence) {
  RuntimePolicyStore s(state(), run());
  EXPECT_TRUE(s.load().problems.empty());
  ASSERT_TRUE(s.set(P("/cg2"), "sync_isolation", "off", false));
  EXPECT_TRUE(fs::exists(dir_ / "state/runtime-policy.json")) << "state dir created on demand";
  ASSERT_TRUE(s.set(P("/cg2"), "sync_isolation", "on", true));
  EXPECT_NE(slurp(dir_ / "state/runtime-policy.json").find("\"off\""), std::string::npos);
  EXPECT_NE(slurp(dir_ / "run/runtime-policy.json").find("\"on\""), std::string::npos);
  EXPECT_TRUE(s.layer()[P("/cg2")].syncIsolation->value) << "--runtime shadows persistent";

  // Reload from disk: the same.
  RuntimePolicyStore again(state(), run());
  auto rep = again.load();
  EXPECT_EQ(rep.persistent, 1u);
  EXPECT_EQ(rep.volatileCount, 1u);
  EXPECT_TRUE(again.layer()[P("/cg2")].syncIsolation->value);

  // A persistent change drops the --runtime value of the same knob.
  ASSERT_TRUE(again.set(P("/cg2"), "sync_isolation", "off", false));
  EXPECT_FALSE(again.layer()[P("/cg2")].syncIsolation->value);
  EXPECT_EQ(slurp(dir_ / "run/runtime-policy.json").find("/cg2"), std::string::npos);

  auto r = again.reset(P("/cg2"));
  ASSERT_TRUE(r);
  EXPECT_TRUE(*r);
  EXPECT_FALSE(again.has(P("/cg2")));
  EXPECT_TRUE(again.layer().empty());
  r = again.reset(P("/cg2"));
  ASSERT_TRUE(r);
  EXPECT_FALSE(*r) << "nothing to drop is not an error";
}

TEST_F(StoreTest, BadValuesAndWriteFailuresChangeNothing) {
  RuntimePolicyStore s(state(), run());
  s.load();
  auto bad = s.set(P("/cg2"), "boost", "sometimes", false);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);
  EXPECT_FALSE(s.has(P("/cg2")));
  // The state dir cannot be created (a file is in the way).
  std::ofstream(dir_ / "state") << "x";
  auto failed = s.set(P("/cg2"), "boost", "deny", false);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().code, 0);
  EXPECT_FALSE(s.has(P("/cg2"))) << "memory unchanged when the file cannot be written";
  EXPECT_TRUE(s.layer().empty());
}

TEST_F(StoreTest, CorruptFileIsMovedAside) {
  fs::create_directories(dir_ / "state");
  std::ofstream(dir_ / "state/runtime-policy.json") << "{\"cgroups\":{}}";
  RuntimePolicyStore s(state(), run());
  auto rep = s.load();
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_NE(rep.problems[0].find("moved aside"), std::string::npos) << rep.problems[0];
  EXPECT_FALSE(fs::exists(dir_ / "state/runtime-policy.json"));
  EXPECT_TRUE(s.layer().empty());
  EXPECT_TRUE(s.set(P("/x"), "boost", "deny", false));
}

TEST(DaemonBusOptions, BusAndStateDir) {
  auto d = parseOptions({});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->bus, "system");
  EXPECT_EQ(d->stateDir, "/var/lib/cxiosync");
  for (const char* ok : {"system", "session", "none", "unix:path=/run/x"}) {
    auto o = parseOptions({std::string("--bus=") + ok, "--state-dir", "/tmp/s"});
    ASSERT_TRUE(o) << ok;
    EXPECT_EQ(o->bus, ok);
    EXPECT_EQ(o->stateDir, "/tmp/s");
  }
  EXPECT_FALSE(parseOptions({"--bus=sytem"}));
  EXPECT_FALSE(parseOptions({"--bus="}));
  EXPECT_FALSE(parseOptions({"--state-dir"}));
}

}  // namespace
}  // namespace cxiosync
