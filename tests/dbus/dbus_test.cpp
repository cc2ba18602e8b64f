// SPDX-License-Identifier: GPL-2.0-or-later
// The dbus tier: a private dbus-daemon per suite, the real BusServer (in the test server,
// with the fake backend, or the real daemon through CXIOSYNC_DBUS_TEST_SERVER), the real
// cxiosyncctl as a subprocess, and raw sdbus-c++ calls for inputs the CLI refuses to send.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sdbus-c++/sdbus-c++.h>

#include "dbus/client.h"
#include "dbus/ctl/systemd_units.h"
#include "dbus/ctl/unit_name.h"
#include "dbus/sdbus_compat.h"
#include "tests/dbus/bus_fixture.h"

namespace {

using namespace std::chrono_literals;
namespace compat = cxiosync::dbus::compat;
using namespace cxiosync;

const std::string kCtl = CXIOSYNC_CTL_PATH;
const std::string kServer = CXIOSYNC_TEST_SERVER_PATH;
const std::string kDir = CXIOSYNC_DBUS_TEST_DIR;
const std::string kIdl = CXIOSYNC_DBUS_IDL_PATH;

using bustest::readLine;
using bustest::run;
using bustest::RunResult;
using bustest::spawn;

bool realDaemon() {
  return std::getenv("CXIOSYNC_DBUS_TEST_SERVER") != nullptr;
}

// A private bus and (optionally) a server on it: the test server with the fake backend, or
// the command in CXIOSYNC_DBUS_TEST_SERVER.
class BusEnv : public bustest::PrivateBus {
 public:
  void startBus(const std::string& config = kDir + "/test-bus.conf") {
    ASSERT_TRUE(PrivateBus::startBus(config)) << "dbus-daemon printed no address";
  }

  void startServer(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv;
    if (const char* cmd = std::getenv("CXIOSYNC_DBUS_TEST_SERVER")) {
      std::istringstream words(cmd);
      for (std::string w; words >> w;) {
        auto pos = w.find("{address}");
        if (pos != std::string::npos) w.replace(pos, 9, address());
        argv.push_back(w);
      }
    } else {
      argv = {kServer, "--address=" + address()};
      argv.insert(argv.end(), extra.begin(), extra.end());
    }
    ASSERT_TRUE(PrivateBus::startServer(argv, 5s)) << "server did not take org.cxiosync1";
  }
};

class DbusBase : public ::testing::Test {
 protected:
  static BusEnv& env() {
    static BusEnv e;
    return e;
  }
  static RunResult ctl(std::vector<std::string> args) {
    std::vector<std::string> argv = {kCtl, "--bus=" + env().address(), "--no-pager"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }
  static std::unique_ptr<dbus::Client> client() {
    return dbus::Client::connect(dbus::BusTarget::at(env().address()));
  }
  // Parses each document with python's json module (one interpreter for all: it is slow to
  // start on a busy machine). With `pairs`, documents 2k and 2k+1 must be equal as JSON, except
  // the value of a counter that moves by itself on a live daemon (cxiosync_ticks_total, the
  // loop's wakeups: it ticked between two `metrics` calls in 2-3 of 40 runs): that sample
  // must be in both, a number, and not go backwards from 2k to 2k+1.
  // Returns "" when all is well, the problems otherwise.
  static std::string jsonProblems(const std::vector<std::string>& docs, bool pairs = false) {
    std::string input;
    for (const auto& d : docs) input += d + std::string(1, '\0');
    const std::string script =
        "import json,sys\n"
        "docs=sys.stdin.read().split('\\x00')[:-1]\n"
        "pairs=" +
        std::string(pairs ? "True" : "False") +
        "\n"
        "bad=[]\n"
        "vals=[]\n"
        "for i,d in enumerate(docs):\n"
        "  try: vals.append(json.loads(d))\n"
        "  except Exception as e: bad.append('doc %d: %s: %r' % (i, e, d)); vals.append(None)\n"
        "moving={'cxiosync_ticks_total'}\n"
        "def split(v):\n"
        "  if not isinstance(v, list): return v, []\n"
        "  rest, seen = [], []\n"
        "  for s in v:\n"
        "    if isinstance(s, dict) and s.get('name') in moving:\n"
        "      seen.append((s['name'], s.get('value'))); s = dict(s, value='<moving>')\n"
        "    rest.append(s)\n"
        "  return rest, seen\n"
        "if pairs:\n"
        "  for i in range(0, len(vals), 2):\n"
        "    (a, ma), (b, mb) = split(vals[i]), split(vals[i+1])\n"
        "    if a != b: bad.append('pair %d differs' % i)\n"
        "    elif [n for n, _ in ma] != [n for n, _ in mb]: bad.append('pair %d: counters' % i)\n"
        "    for (n, x), (_, y) in zip(ma, mb):\n"
        "      if not all(type(v) in (int, float) for v in (x, y)) or y < x:\n"
        "        bad.append('pair %d: %s went %r -> %r' % (i, n, x, y))\n"
        "print('\\n'.join(bad))\n";
    auto r = run({"/usr/bin/env", "python3", "-c", script}, input);
    if (r.rc != 0) return "python failed: " + r.err;
    return r.out == "\n" ? "" : r.out;
  }
  static std::string jsonError(const std::string& text) { return jsonProblems({text}); }
  // Raw call for inputs the client library never sends. Returns the error name or "".
  template <class... Args>
  static std::string rawCall(const std::string& method, Args&&... args) {
    auto conn = sdbus::createSessionBusConnectionWithAddress(env().address());
    auto proxy = compat::createProxy(*conn, "org.cxiosync1", "/org/cxiosync1");
    try {
      proxy->callMethod(method).onInterface("org.cxiosync1.Manager").withArguments(args...);
      return "";
    } catch (const sdbus::Error& e) {
      return e.getName();
    }
  }
  static std::string state() { return ctl({"list", "--json=short"}).out; }
};

// ---- the server with the fake backend, callers are root ------------------------------------

class DbusServer : public DbusBase {
 protected:
  static void SetUpTestSuite() {
    env().startBus();
    env().startServer();
  }
  static void TearDownTestSuite() { env().stop(); }
  void SetUp() override {
    ASSERT_TRUE(env().serverAlive());
    if (!realDaemon()) {
      ASSERT_EQ(ctl({"reset", "/backup.slice"}).rc, 0);
    }
  }
  void TearDown() override { EXPECT_TRUE(env().serverAlive()) << "the server died"; }
};

TEST_F(DbusServer, IntrospectionMatchesTheIdl) {
  std::string xml = client()->introspect();
  std::string path = ::testing::TempDir() + "/introspected.xml";
  std::ofstream(path) << xml;
  auto r = run({"/usr/bin/env", "python3", kDir + "/introspect_normalize.py", kIdl, path});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  // Every method ends with a{sv} options (the contract's forward-compatibility rule).
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("method ", 0) != 0) continue;
    auto lastIn = l.rfind("in ");
    EXPECT_EQ(l.compare(lastIn, 16, "in options:a{sv}"), 0) << l;
  }
}

TEST_F(DbusServer, HumanOutputOfReadVerbs) {
  auto s = ctl({"status"});
  EXPECT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("State: running"), std::string::npos) << s.out;
  if (realDaemon()) GTEST_SKIP() << "fake data below";
  auto l = ctl({"list"});
  EXPECT_EQ(l.rc, 0) << l.err;
  EXPECT_NE(l.out.find("CGROUP"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("/backup.slice"), std::string::npos);
  EXPECT_NE(l.out.find("1 MiB/s (8:0)"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("cgroups listed."), std::string::npos);
  auto nl = ctl({"list", "--no-legend"});
  EXPECT_EQ(nl.out.find("CGROUP"), std::string::npos);
  EXPECT_EQ(nl.out.find("listed"), std::string::npos);
  auto sh = ctl({"show", "backup.slice"});
  EXPECT_EQ(sh.rc, 0) << sh.err;
  EXPECT_NE(sh.out.find("backup.slice → /backup.slice"), std::string::npos) << sh.out;
  EXPECT_NE(sh.out.find("/etc/cxiosync/cxiosync.yaml:12"), std::string::npos) << sh.out;
  auto b = ctl({"boosts"});
  EXPECT_NE(b.out.find("12.3 s"), std::string::npos) << b.out;
  auto sy = ctl({"syncers"});
  EXPECT_NE(sy.out.find("postgres"), std::string::npos) << sy.out;
  EXPECT_NE(sy.out.find("850 us"), std::string::npos) << sy.out;
  auto m = ctl({"metrics"});
  EXPECT_NE(m.out.find("cxiosync_boosts_total 7"), std::string::npos);
  auto v = ctl({"version"});
  EXPECT_EQ(v.rc, 0);
  EXPECT_NE(v.out.find("cxiosyncd   0.1.0"), std::string::npos) << v.out;
}

// Every verb's --json output parses, short and pretty agree, and (fake backend) matches the
// checked-in golden file: the JSON shape is an interface too.
TEST_F(DbusServer, JsonOutputOfEveryVerbParsesAndIsStable) {
  struct Case {
    std::string name;
    std::vector<std::string> args;
  };
  std::vector<Case> cases = {{"status", {"status"}},
                             {"list", {"list"}},
                             {"show", {"show", "/backup.slice"}},
                             {"boosts", {"boosts"}},
                             {"syncers", {"syncers"}},
                             {"metrics", {"metrics"}},
                             {"version", {"version"}},
                             {"isolate", {"isolate", "backup.slice", "on", "--runtime"}},
                             {"boost", {"boost", "/backup.slice", "deny"}},
                             {"ceiling", {"ceiling", "/backup.slice", "10Mi"}},
                             {"tenant", {"tenant", "/backup.slice", "on"}},
                             {"reset", {"reset", "/backup.slice"}},
                             {"reload", {"reload"}}};
  const bool update = std::getenv("CXIOSYNC_UPDATE_GOLDEN") != nullptr;
  std::vector<std::string> docs;  // pretty, short, pretty, short, ...
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto args = c.args;
    RunResult pretty, shortOut;
    // A live daemon's counters move between two calls (cxiosync_ticks_total about once a
    // second: `metrics` differed 2-3 times in 40 runs), and then "short == pretty" would
    // compare two documents. Take the pair again until nothing moved in between (a read
    // verb; the fake backend's data never moves, so it gets one try).
    for (int tries = realDaemon() ? 5 : 1; tries > 0; --tries) {
      args = c.args;
      args.push_back("--json=pretty");
      pretty = ctl(args);
      ASSERT_EQ(pretty.rc, 0) << pretty.err;
      args.back() = "--json=short";
      shortOut = ctl(args);
      ASSERT_EQ(shortOut.rc, 0) << shortOut.err;
      if (tries == 1 || jsonProblems({pretty.out, shortOut.out}, true).empty()) break;
    }
    EXPECT_EQ(shortOut.out.find('\n'), shortOut.out.size() - 1) << "short is one line";
    docs.push_back(pretty.out);
    docs.push_back(shortOut.out);
    if (realDaemon()) continue;
    std::string golden = kDir + "/golden/" + c.name + ".json";
    if (update) {
      std::ofstream(golden) << pretty.out;
      continue;
    }
    std::ifstream in(golden);
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(pretty.out, want.str())
        << "golden " << golden << " (regenerate with CXIOSYNC_UPDATE_GOLDEN=1)";
  }
  EXPECT_EQ(jsonProblems(docs, true), "") << "every document parses; short == pretty";
}

// Every verb's human output (fake backend) matches tests/dbus/golden/human/: the table model
// (policy/output/table.h) must print what the hand-made tables printed. The status line's
// "; N ago" depends on the clock and is cut.
TEST_F(DbusServer, HumanOutputOfEveryVerbIsStable) {
  if (realDaemon()) GTEST_SKIP() << "golden files hold the fake backend's data";
  struct Case {
    std::string name;
    std::vector<std::string> args;
  };
  std::vector<Case> cases = {{"status", {"status"}},
                             {"list", {"list"}},
                             {"list-no-legend", {"list", "--no-legend"}},
                             {"show", {"show", "/backup.slice"}},
                             {"show-unit", {"show", "backup.slice"}},
                             {"boosts", {"boosts"}},
                             {"boosts-no-legend", {"boosts", "--no-legend"}},
                             {"syncers", {"syncers"}},
                             {"syncers-no-legend", {"syncers", "--no-legend"}},
                             {"metrics", {"metrics"}},
                             {"version", {"version"}},
                             {"isolate", {"isolate", "backup.slice", "on", "--runtime"}},
                             {"boost", {"boost", "/backup.slice", "deny"}},
                             {"ceiling", {"ceiling", "/backup.slice", "10Mi"}},
                             {"tenant", {"tenant", "/backup.slice", "on"}},
                             {"reset", {"reset", "/backup.slice"}},
                             {"reload", {"reload"}}};
  const bool update = std::getenv("CXIOSYNC_UPDATE_GOLDEN") != nullptr;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ctl(c.args);
    ASSERT_EQ(r.rc, 0) << r.err;
    std::string out = r.out;
    if (auto since = out.find("; "); c.name == "status" && since != std::string::npos) {
      auto end = out.find(" ago\n", since);
      if (end != std::string::npos) out.replace(since, end + 4 - since, "; <ago>");
    }
    std::string golden = kDir + "/golden/human/" + c.name + ".txt";
    if (update) {
      std::ofstream(golden) << out;
      continue;
    }
    std::ifstream in(golden);
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(out, want.str()) << "golden " << golden
                               << " (regenerate with CXIOSYNC_UPDATE_GOLDEN=1)";
  }
}

TEST_F(DbusServer, JsonFailsRatherThanPrintingText) {
  auto h = ctl({"help", "--json"});
  EXPECT_EQ(h.rc, 2);
  EXPECT_EQ(h.out, "");
  auto e = ctl({"show", "/nope", "--json=short"});
  EXPECT_EQ(e.rc, 1);
  EXPECT_EQ(e.out, "") << "errors go to stderr, never as text on stdout";
}

TEST_F(DbusServer, ChangesApplyAndShowTheirSource) {
  if (realDaemon()) GTEST_SKIP() << "fake tree";
  EXPECT_EQ(ctl({"isolate", "a-b.slice", "off"}).rc, 0);
  auto j = ctl({"show", "/a.slice/a-b.slice", "--json=short"}).out;
  EXPECT_NE(j.find(R"("sync_isolation":{"value":"off","source":"runtime"})"), std::string::npos)
      << j;
  EXPECT_EQ(ctl({"boost", "/a.slice", "deny"}).rc, 0);
  j = ctl({"show", "/a.slice/a-b.slice", "--json=short"}).out;
  EXPECT_NE(j.find(R"("boost":{"value":"deny","source":"runtime"})"), std::string::npos) << j;
  EXPECT_EQ(ctl({"ceiling", "/a.slice", "1M"}).rc, 0);
  j = ctl({"show", "/a.slice", "--json=short"}).out;
  EXPECT_NE(j.find(R"("boost_ceiling":{"value":"1000000","source":"runtime"})"), std::string::npos)
      << j;
  auto q = ctl({"-q", "reset", "/a.slice"});
  EXPECT_EQ(q.rc, 0);
  EXPECT_EQ(q.out, "");
  EXPECT_EQ(ctl({"reset", "/a.slice/a-b.slice"}).rc, 0);
  j = ctl({"show", "/a.slice/a-b.slice", "--json=short"}).out;
  EXPECT_NE(j.find(R"("sync_isolation":{"value":"on","source":"default"})"), std::string::npos)
      << j;
}

// Issue 27: one value syntax. The CLI and the bus take what a config file takes
// (configuration.md §1.3), and a value shows in the unit it was written in. On the old code
// `ceiling 50MiB/s`, `10MB`, `boost yes` and `isolate ON` failed with exit 2 and SetBoostPolicy
// refused "Allow"; `show` printed the ceiling as 52428800.
TEST_F(DbusServer, CliAndBusTakeTheConfigValueSyntax) {
  using Opts = std::map<std::string, sdbus::Variant>;
  const std::string cg = "/backup.slice";
  auto r = ctl({"ceiling", cg, "50MiB/s"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Set boost_ceiling=50 MiB/s on /backup.slice.\n");
  auto j = ctl({"show", cg, "--json=short"}).out;
  EXPECT_NE(j.find(R"("boost_ceiling":{"value":"52428800","source":"runtime"})"), std::string::npos)
      << j;
  auto h = ctl({"show", cg}).out;
  EXPECT_NE(h.find("50 MiB/s"), std::string::npos) << h;
  ASSERT_EQ(ctl({"ceiling", cg, "10MB"}).rc, 0);
  EXPECT_NE(ctl({"show", cg, "--json=short"}).out.find(R"("value":"10000000","source":"runtime")"),
            std::string::npos);
  EXPECT_NE(ctl({"show", cg}).out.find("10 MB/s"), std::string::npos);
  ASSERT_EQ(ctl({"ceiling", cg, "10 MB/s"}).rc, 0);
  r = ctl({"boost", cg, "yes", "--json=short"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(R"("knob":"boost","value":"allow")"), std::string::npos) << r.out;
  r = ctl({"isolate", cg, "ON", "--json=short"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(R"("knob":"sync_isolation","value":"on")"), std::string::npos) << r.out;
  EXPECT_EQ(ctl({"isolate", cg, "Y"}).rc, 0);
  r = ctl({"isolate", cg, "maybe"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("expected a boolean"), std::string::npos) << r.err;
  EXPECT_EQ(ctl({"ceiling", cg, "10MiB/min"}).rc, 2);
  EXPECT_EQ(rawCall("SetBoostPolicy", cg, std::string("Allow"), Opts{}), "");
  EXPECT_EQ(rawCall("SetBoostCeiling", cg, std::string("1.5M"), Opts{}), "");
  EXPECT_NE(ctl({"show", cg, "--json=short"}).out.find(R"("value":"1500000","source":"runtime")"),
            std::string::npos);
  EXPECT_EQ(ctl({"reset", cg}).rc, 0);
}

// `cxiosyncctl tenant` and SetTenant (issue 15): a tenant boundary is this cgroup's only (not
// inherited), shows up in `show`, and takes the runtime option like the other changes.
TEST_F(DbusServer, TenantVerbAndMethod) {
  if (realDaemon()) GTEST_SKIP() << "fake tree";
  using Opts = std::map<std::string, sdbus::Variant>;
  auto r = ctl({"tenant", "a-b.slice", "on", "--runtime", "--json=short"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(R"("knob":"tenant","value":"on","runtime":true)"), std::string::npos)
      << r.out;
  auto j = ctl({"show", "/a.slice/a-b.slice", "--json=short"}).out;
  EXPECT_NE(j.find(R"("tenant":{"value":"on","source":"runtime"})"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("tenant_sync":{"value":"self","source":"default"})"), std::string::npos) << j;
  j = ctl({"show", "/a.slice", "--json=short"}).out;
  EXPECT_NE(j.find(R"("tenant":{"value":"off","source":"default"})"), std::string::npos) << j;
  auto h = ctl({"tenant", "/a.slice/a-b.slice", "off"});
  EXPECT_EQ(h.rc, 0) << h.err;
  EXPECT_EQ(h.out, "Set tenant=off on /a.slice/a-b.slice.\n");
  j = ctl({"show", "/a.slice/a-b.slice", "--json=short"}).out;
  EXPECT_NE(j.find(R"("tenant":{"value":"off","source":"runtime"})"), std::string::npos) << j;

  const std::string before = state();
  EXPECT_EQ(ctl({"tenant", "/backup.slice", "maybe"}).rc, 2);
  EXPECT_EQ(ctl({"tenant", "/backup.slice"}).rc, 2);
  EXPECT_EQ(ctl({"tenant", "/nope.slice", "on"}).rc, 1);
  EXPECT_EQ(rawCall("SetTenant", std::string("../etc"), true, Opts{}),
            "org.cxiosync1.Error.InvalidArgument");
  EXPECT_EQ(rawCall("SetTenant", std::string("/nope.slice"), true, Opts{}),
            "org.cxiosync1.Error.NoSuchCgroup");
  EXPECT_EQ(rawCall("SetTenant", std::string("/backup.slice"), true,
                    Opts{{"bogus", sdbus::Variant(true)}}),
            "org.cxiosync1.Error.InvalidArgument");
  EXPECT_EQ(state(), before);
  EXPECT_EQ(ctl({"reset", "/a.slice/a-b.slice"}).rc, 0);
}

// Bad input of every kind: the right error name, and nothing changed.
TEST_F(DbusServer, BadInputGetsTheRightErrorAndChangesNothing) {
  using Opts = std::map<std::string, sdbus::Variant>;
  const std::string before = state();
  const std::string kInvalid = "org.cxiosync1.Error.InvalidArgument";
  const std::string kNoSuch = "org.cxiosync1.Error.NoSuchCgroup";
  std::string huge(5000, 'a');
  std::string longName = "/" + std::string(300, 'x');
  for (std::string bad : {std::string(""), std::string("../etc"), std::string("/a/../../etc"),
                          std::string("/./a"), std::string("/a\x01"), huge, longName}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(rawCall("ShowCgroup", bad, Opts{}), kInvalid);
    EXPECT_EQ(rawCall("SetIsolation", bad, true, Opts{}), kInvalid);
    EXPECT_EQ(rawCall("SetBoostPolicy", bad, std::string("allow"), Opts{}), kInvalid);
    EXPECT_EQ(rawCall("SetBoostCeiling", bad, std::string("max"), Opts{}), kInvalid);
    EXPECT_EQ(rawCall("ResetPolicy", bad, Opts{}), kInvalid);
  }
  const std::string kGood = "/backup.slice";
  EXPECT_EQ(rawCall("SetBoostPolicy", kGood, std::string("maybe"), Opts{}), kInvalid);
  EXPECT_EQ(rawCall("SetBoostPolicy", kGood, std::string("perhaps"), Opts{}), kInvalid);
  for (std::string c : {"", "0", "10X", "-5", "1.5Q", "18446744073709551615",
                        "99999999999999999999", "max max", "Mi", "10MiB/min"}) {
    SCOPED_TRACE(c);
    EXPECT_EQ(rawCall("SetBoostCeiling", kGood, c, Opts{}), kInvalid);
  }
  // Options: unknown keys, wrong types, keys a method does not take.
  EXPECT_EQ(rawCall("SetIsolation", kGood, true, Opts{{"bogus", sdbus::Variant(true)}}), kInvalid);
  EXPECT_EQ(
      rawCall("SetIsolation", kGood, true, Opts{{"runtime", sdbus::Variant(std::string("yes"))}}),
      kInvalid);
  EXPECT_EQ(rawCall("ResetPolicy", kGood, Opts{{"runtime", sdbus::Variant(true)}}), kInvalid);
  EXPECT_EQ(rawCall("Reload", Opts{{"force", sdbus::Variant(true)}}), kInvalid);
  EXPECT_EQ(rawCall("GetStatus", Opts{{"x", sdbus::Variant(uint32_t{1})}}), kInvalid);
  EXPECT_EQ(rawCall("ListCgroups", Opts{{"x", sdbus::Variant(true)}}), kInvalid);
  // Well-formed but absent.
  EXPECT_EQ(rawCall("ShowCgroup", std::string("/nope.slice"), Opts{}), kNoSuch);
  EXPECT_EQ(rawCall("SetIsolation", std::string("/nope.slice"), true, Opts{}), kNoSuch);
  EXPECT_EQ(state(), before);
  if (realDaemon()) return;
  EXPECT_EQ(rawCall("SetBoostPolicy", std::string("/legacy.slice"), std::string("deny"), Opts{}),
            "org.cxiosync1.Error.NotSupported");
  // A backend that throws: Error.Failed, and the server lives on (sdbus-c++ 1.2 would abort).
  EXPECT_EQ(rawCall("SetIsolation", std::string("/broken.slice"), true, Opts{}),
            "org.cxiosync1.Error.Failed");
  EXPECT_EQ(rawCall("ShowCgroup", std::string("/broken.slice"), Opts{}),
            "org.cxiosync1.Error.Failed");
  EXPECT_TRUE(env().serverAlive());
  EXPECT_EQ(state(), before);
}

TEST_F(DbusServer, ExitCodesPerVerb) {
  EXPECT_EQ(ctl({"status"}).rc, 0);
  EXPECT_EQ(ctl({"bogus"}).rc, 2);
  EXPECT_EQ(ctl({"show"}).rc, 2);
  EXPECT_EQ(ctl({"list", "--json=yaml"}).rc, 2);
  EXPECT_EQ(ctl({"list", "--frobnicate"}).rc, 2);
  EXPECT_EQ(ctl({"reset", "/x", "--runtime"}).rc, 2);
  EXPECT_EQ(ctl({"show", "../x"}).rc, 2);
  EXPECT_EQ(ctl({"isolate", "/backup.slice", "maybe"}).rc, 2);
  EXPECT_EQ(ctl({"boost", "/backup.slice", "sometimes"}).rc, 2);
  EXPECT_EQ(ctl({"ceiling", "/backup.slice", "fast"}).rc, 2);
  EXPECT_EQ(ctl({"ceiling", "bad name.slice", "max"}).rc, 2);
  auto ns = ctl({"isolate", "/nope.slice", "on"});
  EXPECT_EQ(ns.rc, 1);
  EXPECT_NE(ns.err.find("/nope.slice"), std::string::npos) << ns.err;
  if (realDaemon()) return;
  EXPECT_EQ(ctl({"boost", "/legacy.slice", "deny"}).rc, 1);
  EXPECT_EQ(ctl({"isolate", "/broken.slice", "on"}).rc, 1);
}

TEST_F(DbusServer, ReloadFailureKeepsOldConfigAndSaysWhere) {
  if (realDaemon()) GTEST_SKIP();
  env().stopServer();
  env().startServer({"--fail-reload"});
  auto r = ctl({"reload"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("cxiosync.yaml:7:11"), std::string::npos) << r.err;
  EXPECT_EQ(ctl({"reload"}).rc, 0);
}

TEST_F(DbusServer, SignalsArriveInMonitor) {
  int outFd, errFd;
  pid_t mon = spawn({kCtl, "--bus=" + env().address(), "monitor", "--json=short"}, &outFd, &errFd);
  ASSERT_NE(readLine(errFd, 10s).find("Monitoring"), std::string::npos);
  if (!realDaemon()) kill(env().serverPid(), SIGUSR1);
  ASSERT_EQ(ctl({"isolate", "/backup.slice", "on"}).rc, 0);
  std::vector<std::string> lines;
  for (int i = 0; i < (realDaemon() ? 1 : 5); ++i) {
    lines.push_back(readLine(outFd, 10s));
  }
  EXPECT_EQ(jsonProblems(lines), "");
  kill(mon, SIGINT);
  int st;
  waitpid(mon, &st, 0);
  close(outFd);
  close(errFd);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "monitor ends cleanly on Ctrl-C";
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(
      all.find(
          R"({"event":"PolicyChanged","cgroup":"/backup.slice","knob":"sync_isolation","value":"on","source":"runtime"})"),
      std::string::npos)
      << all;
  if (realDaemon()) return;
  EXPECT_NE(all.find(R"("event":"SyncDetected","comm":"sync","cgroup":"/system.slice")"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find(R"("event":"BoostStarted")"), std::string::npos) << all;
  EXPECT_NE(all.find(R"("original_wbps":1048576,"boosted_wbps":null)"), std::string::npos) << all;
  EXPECT_NE(
      all.find(
          R"("event":"BoostEnded","cgroup":"/backup.slice","dirtier":"/backup.slice","device":"8:0","reason":"syncers-left","duration_usec":12300000)"),
      std::string::npos)
      << all;
}

TEST_F(DbusServer, ActiveBoostsEmitsPropertiesChanged) {
  if (realDaemon()) GTEST_SKIP();
  auto conn = sdbus::createSessionBusConnectionWithAddress(env().address());
  auto proxy = compat::createProxy(*conn, "org.cxiosync1", "/org/cxiosync1");
  std::map<std::string, sdbus::Variant> seen;
  proxy->uponSignal("PropertiesChanged")
      .onInterface("org.freedesktop.DBus.Properties")
      .call([&](const std::string& iface, const std::map<std::string, sdbus::Variant>& changed,
                const std::vector<std::string>&) {
        if (iface == "org.cxiosync1.Manager") seen = changed;
      });
  compat::finishSubscriptions(*proxy);
  uint32_t before =
      proxy->getProperty("ActiveBoosts").onInterface("org.cxiosync1.Manager").get<uint32_t>();
  kill(env().serverPid(), SIGUSR2);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (seen.empty() && std::chrono::steady_clock::now() < deadline) {
    while (compat::processPending(*conn)) {
    }
    auto pd = compat::pollData(*conn);
    struct pollfd p[2] = {{pd.fd, pd.events, 0}, {pd.eventFd, POLLIN, 0}};
    poll(p, 2, 100);
  }
  ASSERT_TRUE(seen.count("ActiveBoosts"));
  EXPECT_NE(seen["ActiveBoosts"].get<uint32_t>(), before);
  kill(env().serverPid(), SIGUSR2);  // back to one boost for the golden files
  for (int i = 0; i < 100; ++i) {
    uint32_t now =
        proxy->getProperty("ActiveBoosts").onInterface("org.cxiosync1.Manager").get<uint32_t>();
    if (now == before) break;
    std::this_thread::sleep_for(20ms);
  }
  std::string version =
      proxy->getProperty("Version").onInterface("org.cxiosync1.Manager").get<std::string>();
  EXPECT_EQ(version, "0.1.0");
}

// ---- authorization: callers treated as uid 1000, with a fake polkit ------------------------

class DbusAuth : public DbusBase {
 protected:
  static void SetUpTestSuite() { env().startBus(); }
  static void TearDownTestSuite() { env().stop(); }
  // GTEST_SKIP only ends the test body when called from SetUp or the body itself.
  void SetUp() override {
    if (realDaemon()) GTEST_SKIP() << "uid/polkit injection is a test-server feature";
  }
  void TearDown() override { env().stopServer(); }
  void serve(const std::string& polkit) {
    env().startServer({"--as-uid=1000", "--polkit=" + polkit});
  }
};

TEST_F(DbusAuth, NoPolkitMeansRootOnly) {
  serve("absent");
  const std::string before = state();
  auto r = ctl({"isolate", "/backup.slice", "on"});
  EXPECT_EQ(r.rc, 4);
  EXPECT_NE(r.err.find("polkit is not available"), std::string::npos) << r.err;
  EXPECT_EQ(ctl({"reload"}).rc, 4);
  EXPECT_EQ(state(), before);
  // Reads stay open to everyone.
  EXPECT_EQ(ctl({"list"}).rc, 0);
  EXPECT_EQ(ctl({"show", "/backup.slice"}).rc, 0);
  EXPECT_EQ(rawCall("SetIsolation", std::string("/backup.slice"), true,
                    std::map<std::string, sdbus::Variant>{}),
            "org.cxiosync1.Error.AccessDenied");
}

TEST_F(DbusAuth, PolkitDenies) {
  serve("deny");
  const std::string before = state();
  EXPECT_EQ(ctl({"tenant", "/backup.slice", "on"}).rc, 4);
  EXPECT_EQ(rawCall("SetTenant", std::string("/backup.slice"), true,
                    std::map<std::string, sdbus::Variant>{}),
            "org.cxiosync1.Error.AccessDenied");
  EXPECT_EQ(ctl({"boost", "/backup.slice", "deny"}).rc, 4);
  EXPECT_EQ(ctl({"reset", "/backup.slice"}).rc, 4);
  EXPECT_EQ(state(), before);
}

TEST_F(DbusAuth, PolkitAllows) {
  serve("allow");
  EXPECT_EQ(ctl({"isolate", "/backup.slice", "off"}).rc, 0);
  EXPECT_NE(ctl({"show", "/backup.slice", "--json=short"})
                .out.find(R"("sync_isolation":{"value":"off","source":"runtime"})"),
            std::string::npos);
}

TEST_F(DbusAuth, NoAskPasswordIsHonoured) {
  serve("interactive");  // the fake says yes only when interaction is allowed
  auto denied = ctl({"--no-ask-password", "isolate", "/backup.slice", "off"});
  EXPECT_EQ(denied.rc, 4);
  EXPECT_NE(denied.err.find("without --no-ask-password"), std::string::npos) << denied.err;
  EXPECT_EQ(ctl({"isolate", "/backup.slice", "off"}).rc, 0);
}

TEST_F(DbusAuth, ValidationComesBeforeAuthorization) {
  serve("deny");
  // Bad input is InvalidArgument (exit 2) even for a caller who may not change anything.
  EXPECT_EQ(rawCall("SetBoostPolicy", std::string("/backup.slice"), std::string("maybe"),
                    std::map<std::string, sdbus::Variant>{}),
            "org.cxiosync1.Error.InvalidArgument");
}

// ---- a bus without the daemon ----------------------------------------------------------------

class DbusNoDaemon : public DbusBase {
 protected:
  static void SetUpTestSuite() { env().startBus(); }
  static void TearDownTestSuite() { env().stop(); }
};

TEST_F(DbusNoDaemon, ExitCodes) {
  EXPECT_EQ(ctl({"status"}).rc, 3) << "LSB: not running";
  auto sj = ctl({"status", "--json=short"});
  EXPECT_EQ(sj.rc, 3);
  EXPECT_EQ(sj.out, "{\"running\":false}\n");
  for (std::vector<std::string> v : std::vector<std::vector<std::string>>{{"list"},
                                                                          {"show", "/a"},
                                                                          {"isolate", "/a", "on"},
                                                                          {"boost", "/a", "allow"},
                                                                          {"ceiling", "/a", "max"},
                                                                          {"reset", "/a"},
                                                                          {"boosts"},
                                                                          {"syncers"},
                                                                          {"monitor"},
                                                                          {"metrics"},
                                                                          {"reload"}}) {
    SCOPED_TRACE(v[0]);
    auto r = ctl(v);
    EXPECT_EQ(r.rc, 7) << r.err;
    v.push_back("--json=short");
    r = ctl(v);
    EXPECT_EQ(r.rc, 7) << r.err;
    EXPECT_EQ(r.out, "");
  }
  auto ver = ctl({"version", "--json=short"});
  EXPECT_EQ(ver.rc, 0);
  EXPECT_NE(ver.out.find("\"cxiosyncd\":null"), std::string::npos) << ver.out;
}

// ---- systemd's answers: a fake org.freedesktop.systemd1 on the private bus -----------------
// cxiosyncctl asks the system manager only on the system bus; here the lookup behind it
// (dbus/ctl/systemd_units.cpp) talks to a fake with systemd's names, interfaces and errors.
// ControlGroup and Slice are registered only on the type's interface (.Service, .Scope), as
// systemd registers bus_unit_cgroup_vtable: asking org.freedesktop.systemd1.Unit would fail.

class FakeSystemd {
 public:
  struct Unit {
    std::string type, loadState, activeState, cgroup, slice;
  };
  explicit FakeSystemd(const std::string& address)
      : conn_(sdbus::createSessionBusConnectionWithAddress(address)) {
    manager_ = compat::createObject(*conn_, "/org/freedesktop/systemd1");
    auto find = [this](const std::string& name, bool loaded) -> sdbus::ObjectPath {
      asked_.push_back((loaded ? "GetUnit " : "LoadUnit ") + name);
      if (name == "denied.service") {
        throw compat::error("org.freedesktop.DBus.Error.AccessDenied", "Access denied");
      }
      auto it = units_.find(name);
      bool isLoaded = it != units_.end() && it->second.activeState != "inactive";
      if (loaded && !isLoaded) {
        throw compat::error("org.freedesktop.systemd1.NoSuchUnit", "Unit " + name + " not loaded.");
      }
      return sdbus::ObjectPath(pathOf(name));
    };
    const std::string managerIface = "org.freedesktop.systemd1.Manager";
    compat::VTableBuilder(*manager_)
        .method(managerIface, "GetUnit",
                [find](const std::string& name) { return find(name, true); })
        .method(managerIface, "LoadUnit",
                [find](const std::string& name) { return find(name, false); })
        .finish();
    units_ = {
        {"cxvm-dirtier.service",
         {"Service", "loaded", "active", "/throttled.slice/cxvm-dirtier.service",
          "throttled.slice"}},
        {"session-2.scope",
         {"Scope", "loaded", "active", "/user.slice/user-1000.slice/session-2.scope",
          "user-1000.slice"}},
        {"backup.service", {"Service", "loaded", "inactive", "", "backup.slice"}},
    };
    for (const auto& [name, u] : units_) addUnit(name, u);
    addUnit("nosuch.service", {"Service", "not-found", "inactive", "", ""});
    compat::requestName(*conn_, "org.freedesktop.systemd1");
    conn_->enterEventLoopAsync();
  }
  ~FakeSystemd() {
    conn_->leaveEventLoop();
    objects_.clear();
    manager_.reset();
  }
  const std::vector<std::string>& asked() const { return asked_; }

 private:
  static std::string pathOf(const std::string& name) {
    std::string p = "/org/freedesktop/systemd1/unit/";
    for (char c : name) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        p += c;
      } else {
        char buf[4];
        std::snprintf(buf, sizeof buf, "_%02x", static_cast<unsigned char>(c));
        p += buf;
      }
    }
    return p;
  }
  void addUnit(const std::string& name, const Unit& u) {
    auto obj = compat::createObject(*conn_, pathOf(name));
    const std::string unitIface = "org.freedesktop.systemd1.Unit";
    const std::string typeIface = "org.freedesktop.systemd1." + u.type;
    compat::VTableBuilder(*obj)
        .property(unitIface, "LoadState", [u] { return u.loadState; })
        .property(unitIface, "ActiveState", [u] { return u.activeState; })
        .property(typeIface, "ControlGroup", [u] { return u.cgroup; })
        .property(typeIface, "Slice", [u] { return u.slice; })
        .finish();
    objects_.push_back(std::move(obj));
  }

  std::unique_ptr<sdbus::IConnection> conn_;
  std::unique_ptr<sdbus::IObject> manager_;
  std::vector<std::unique_ptr<sdbus::IObject>> objects_;
  std::map<std::string, Unit> units_;
  std::vector<std::string> asked_;
};

class DbusSystemd : public DbusBase {
 protected:
  static void SetUpTestSuite() { env().startBus(); }
  static void TearDownTestSuite() { env().stop(); }
  static std::string resolve(ctl::UnitLookup& lookup, const std::string& unit) {
    auto r = ctl::resolveCgroupArg(unit, &lookup);
    return r ? r->path : "ERR " + std::to_string(r.error().code) + ": " + r.error().message;
  }
};

TEST_F(DbusSystemd, UnitsResolveThroughTheirControlGroup) {
  FakeSystemd fake(env().address());
  auto lookup = ctl::systemdUnitLookup(dbus::BusTarget::at(env().address()), false);
  EXPECT_EQ(resolve(*lookup, "cxvm-dirtier.service"), "/throttled.slice/cxvm-dirtier.service");
  EXPECT_EQ(resolve(*lookup, "session-2.scope"), "/user.slice/user-1000.slice/session-2.scope");
  EXPECT_EQ(resolve(*lookup, "backup.service"),
            "ERR 2: backup.service is not active (inactive): a unit has a cgroup only while it "
            "runs; when started it will be /backup.slice/backup.service (backup.slice), pass "
            "that path to set policy before it starts");
  EXPECT_EQ(resolve(*lookup, "nosuch.service"),
            "ERR 2: Unit nosuch.service not found (systemd has no such unit)");
  EXPECT_EQ(resolve(*lookup, "denied.service"),
            "ERR 5: Cannot resolve denied.service through systemd: Access denied "
            "(org.freedesktop.DBus.Error.AccessDenied)");
  // Slices and init.scope are not asked; a loaded unit is not loaded again.
  EXPECT_EQ(resolve(*lookup, "a-b.slice"), "/a.slice/a-b.slice");
  EXPECT_EQ(resolve(*lookup, "init.scope"), "/init.scope");
  EXPECT_EQ(fake.asked(),
            (std::vector<std::string>{"GetUnit cxvm-dirtier.service", "GetUnit session-2.scope",
                                      "GetUnit backup.service", "LoadUnit backup.service",
                                      "GetUnit nosuch.service", "LoadUnit nosuch.service",
                                      "GetUnit denied.service"}));
}

TEST_F(DbusSystemd, NoSystemdOnTheBusFallsBackToTheDefaultSlice) {
  auto lookup = ctl::systemdUnitLookup(dbus::BusTarget::at(env().address()), false);
  auto r = ctl::resolveCgroupArg("backup.service", lookup.get());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->path, "/system.slice/backup.service");
  EXPECT_TRUE(r->assumed);
  EXPECT_NE(r->note.find("Note: systemd is not reachable ("), std::string::npos) << r->note;
  EXPECT_NE(r->note.find("org.freedesktop.DBus.Error.ServiceUnknown"), std::string::npos)
      << r->note;
  // A bus that is not there at all: the same fallback.
  auto gone = ctl::systemdUnitLookup(dbus::BusTarget::at("unix:path=/nonexistent/bus"), false);
  auto g = ctl::resolveCgroupArg("backup.service", gone.get());
  ASSERT_TRUE(g);
  EXPECT_EQ(g->path, "/system.slice/backup.service");
  EXPECT_NE(g->note.find("cannot connect"), std::string::npos) << g->note;
}

// ---- the shipped system-bus policy (packaging/org.cxiosync1.conf) -------------------------
// A system-type bus with Debian's default rules plus our policy file; callers run as nobody
// (setpriv), so the uid comes from the bus driver for real (no override in the server).

const std::string kNobody[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                               "--clear-groups", "--"};

class DbusSystemPolicy : public DbusBase {
 protected:
  static void SetUpTestSuite() {
    std::string dir = ::testing::TempDir() + "/cxiosync-sysbus-" + std::to_string(getpid());
    std::string conf = bustest::writeSystemPolicyBusConfig(dir, kDir + "/../..");
    env().startBus(conf);
    chmod((dir + "/bus").c_str(), 0777);
  }
  static void TearDownTestSuite() { env().stop(); }
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to run callers as nobody (setpriv)";
    auto probe = asNobody({"--version", "-q"});
    if (probe.rc != 0) GTEST_SKIP() << "nobody cannot run " << kCtl << ": " << probe.err;
  }
  void TearDown() override { env().stopServer(); }
  static RunResult asNobody(std::vector<std::string> args) {
    std::vector<std::string> argv(std::begin(kNobody), std::end(kNobody));
    argv.push_back(kCtl);
    argv.push_back("--bus=" + env().address());
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }
};

TEST_F(DbusSystemPolicy, OnlyRootOwnsTheName) {
  if (realDaemon()) GTEST_SKIP();
  std::vector<std::string> argv(std::begin(kNobody), std::end(kNobody));
  argv.push_back(kServer);
  argv.push_back("--address=" + env().address());
  auto r = run(argv, {}, 10s);
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot own org.cxiosync1"), std::string::npos) << r.err;
}

TEST_F(DbusSystemPolicy, EveryoneReadsOnlyAuthorizedCallersChange) {
  if (realDaemon()) GTEST_SKIP();
  env().startServer();  // as root, no polkit on this bus, real caller uids
  auto list = asNobody({"list", "--json=short"});
  EXPECT_EQ(list.rc, 0) << list.err;
  EXPECT_EQ(asNobody({"show", "/backup.slice"}).rc, 0);
  EXPECT_EQ(asNobody({"status"}).rc, 0);
  EXPECT_EQ(asNobody({"version", "--json=short"}).out,
            "{\"cxiosyncctl\":\"0.1.0\",\"cxiosyncd\":\"0.1.0\"}\n");
  auto denied = asNobody({"isolate", "/backup.slice", "off"});
  EXPECT_EQ(denied.rc, 4) << denied.err;
  EXPECT_NE(denied.err.find("uid 65534"), std::string::npos) << denied.err;
  EXPECT_EQ(asNobody({"reload"}).rc, 4);
  EXPECT_EQ(asNobody({"list", "--json=short"}).out, list.out) << "nothing changed";
  // Root passes the same path (uid 0 from the bus driver).
  EXPECT_EQ(ctl({"isolate", "/backup.slice", "off"}).rc, 0);
  EXPECT_EQ(ctl({"reset", "/backup.slice"}).rc, 0);
  // Interfaces the policy does not open are refused by the bus itself.
  std::vector<std::string> argv(std::begin(kNobody), std::end(kNobody));
  for (const char* a : {"/usr/bin/busctl", "--address", "", "set-property", "org.cxiosync1",
                        "/org/cxiosync1", "org.cxiosync1.Manager", "DryRun", "b", "true"}) {
    argv.push_back(a);
  }
  argv[argv.size() - 8] = env().address();
  auto set = run(argv);
  EXPECT_NE(set.rc, 0);
  EXPECT_NE(set.err.find("ccess denied"), std::string::npos) << set.err;
}

// The real polkitd (if installed) on a private bus: our CheckAuthorization call must be
// accepted as well-formed (a marshalling mistake would come back as InvalidArgs). Unless the
// policy file is installed, polkitd answers "action not registered": still a refusal.
TEST_F(DbusSystemPolicy, RealPolkitdAcceptsOurCheck) {
  const char* polkitd = "/usr/lib/polkit-1/polkitd";
  if (realDaemon() || access(polkitd, X_OK) != 0) GTEST_SKIP() << "no polkitd";
  int outFd;
  pid_t pk =
      spawn({"/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=" + env().address(), polkitd, "--no-debug"},
            &outFd, nullptr);
  auto conn = sdbus::createSessionBusConnectionWithAddress(env().address());
  auto driver = compat::createProxy(*conn, "org.freedesktop.DBus", "/org/freedesktop/DBus");
  bool up = false;
  for (int i = 0; i < 200 && !up; ++i) {
    driver->callMethod("NameHasOwner")
        .onInterface("org.freedesktop.DBus")
        .withArguments(std::string("org.freedesktop.PolicyKit1"))
        .storeResultsTo(up);
    if (!up) std::this_thread::sleep_for(25ms);
  }
  if (up) {
    env().startServer();
    auto r = asNobody({"--no-ask-password", "isolate", "/backup.slice", "off"});
    EXPECT_EQ(r.rc, 4) << r.err;
    EXPECT_NE(r.err.find("uid 65534"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("InvalidArgs"), std::string::npos) << r.err;
  }
  kill(pk, SIGTERM);
  int st;
  waitpid(pk, &st, 0);
  close(outFd);
  if (!up) GTEST_SKIP() << "polkitd did not start on the private bus";
}

TEST(DbusLocal, CheckConfigNeedsNoDaemon) {
  std::string good = ::testing::TempDir() + "/good.yaml";
  std::ofstream(good) << "# nothing set: built-in defaults\n";
  auto r = run({kCtl, "--bus=unix:path=/nonexistent", "check-config", good});
  EXPECT_EQ(r.rc, 0) << r.err;
  std::string bad = ::testing::TempDir() + "/bad.yaml";
  std::ofstream(bad) << "detector: sometimes\n";
  r = run({kCtl, "check-config", bad});
  EXPECT_EQ(r.rc, 6);
  EXPECT_NE(r.err.find(bad + ":1"), std::string::npos) << r.err;
  r = run({kCtl, "check-config", bad, "--json=short"});
  EXPECT_EQ(r.rc, 6);
  EXPECT_NE(r.out.find("\"valid\":false"), std::string::npos) << r.out;
  EXPECT_EQ(run({kCtl, "check-config", "/nonexistent.yaml"}).rc, 6);
  EXPECT_EQ(run({kCtl, "--bus=unix:path=/nonexistent", "list"}).rc, 7);
}

}  // namespace
