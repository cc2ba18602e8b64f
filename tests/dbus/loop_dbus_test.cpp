// SPDX-License-Identifier: GPL-2.0-or-later
// Loop devices over D-Bus and cxiosyncctl loop, on this host's REAL kernel: a private
// dbus-daemon, the test server with --loop-run-dir (BusServer + the real LoopManager through
// daemon/loop_bus_backend), the real cxiosyncctl as a subprocess, raw sdbus-c++ calls for
// inputs the CLI never sends. Needs root and a usable /dev/loop-control (skips otherwise, or
// with CXIOSYNC_SKIP_HOST_LOOP=1). Every device a test sets up is detached in TearDown, and
// the suite fails if the set of bound loop devices differs from before it ran.
#include <fcntl.h>
#include <linux/loop.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sdbus-c++/sdbus-c++.h>

#include "dbus/client.h"
#include "dbus/sdbus_compat.h"
#include "tests/dbus/bus_fixture.h"

namespace {

using namespace std::chrono_literals;
namespace compat = cxiosync::dbus::compat;
using namespace cxiosync;
namespace fs = std::filesystem;

const std::string kCtl = CXIOSYNC_CTL_PATH;
const std::string kServer = CXIOSYNC_TEST_SERVER_PATH;
const std::string kDir = CXIOSYNC_DBUS_TEST_DIR;
const std::string kIdl = CXIOSYNC_DBUS_IDL_PATH;
using Opts = std::map<std::string, sdbus::Variant>;

using bustest::readLine;
using bustest::RunResult;
using bustest::spawn;

// Loop commands may wait for udev and the kernel: a longer timeout than the fixture's default.
RunResult run(const std::vector<std::string>& argv) {
  return bustest::run(argv, {}, 60s);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

// name -> backing file, for every bound loop device (sysfs).
std::map<std::string, std::string> boundLoops() {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/block", ec)) {
    std::string name = e.path().filename();
    if (name.rfind("loop", 0) != 0) continue;
    std::string bf = e.path() / "loop" / "backing_file";
    if (fs::exists(bf, ec)) out[name] = slurp(bf);
  }
  return out;
}

// Whether `name` is unbound within a few seconds: udev (blkid) may hold a new device open for
// a moment, and a detach of a device in use completes on its last close.
bool goneSoon(const std::string& name) {
  for (int i = 0; i < 150; ++i) {
    if (!boundLoops().count(name)) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

std::string sysLoop(const std::string& name, const std::string& file) {
  return slurp("/sys/block/" + name + "/loop/" + file);
}

// A JSON string value of `key` in a short JSON document ("" when absent).
std::string jsonString(const std::string& doc, const std::string& key) {
  auto k = doc.find("\"" + key + "\":\"");
  if (k == std::string::npos) return {};
  auto start = k + key.size() + 4;
  return doc.substr(start, doc.find('"', start) - start);
}

std::string whyNoLoops() {
  if (std::getenv("CXIOSYNC_SKIP_HOST_LOOP")) return "CXIOSYNC_SKIP_HOST_LOOP is set";
  if (geteuid() != 0) return "needs root for real loop devices";
  int fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (fd < 0) return "/dev/loop-control unusable: " + std::string(strerror(errno));
  close(fd);
  return {};
}

class Env : public bustest::PrivateBus {
 public:
  void startBus() { (void)PrivateBus::startBus(kDir + "/test-bus.conf"); }
  bool startServer(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {kServer, "--address=" + address(), "--loop-run-dir=" + runDir};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return PrivateBus::startServer(argv, 10s);
  }
  std::string runDir, dataDir;
};

class DbusLoop : public ::testing::Test {
 protected:
  static Env& env() {
    static Env e;
    return e;
  }
  static std::string& skipReason() {
    static std::string s;
    return s;
  }
  static std::map<std::string, std::string>& before() {
    static std::map<std::string, std::string> b;
    return b;
  }
  static void SetUpTestSuite() {
    skipReason() = whyNoLoops();
    if (!skipReason().empty()) return;
    before() = boundLoops();
    // Canonical: the kernel shows backing files by their canonical path.
    std::string base = (fs::weakly_canonical(::testing::TempDir()) /
                        ("cxiosync-loopbus-" + std::to_string(getpid())))
                           .string();
    env().runDir = base + "/run";
    env().dataDir = base + "/data";  // ext4 here: direct I/O can work
    fs::create_directories(env().runDir);
    fs::create_directories(env().dataDir);
    env().startBus();
  }
  static void TearDownTestSuite() {
    if (!skipReason().empty()) return;
    env().stop();
    detachOurs();
    // Other processes (parallel ctest runs of this binary, other suites) may set up loop
    // devices meanwhile: compare without theirs.
    auto now = boundLoops();
    std::erase_if(now, [](const auto& e) {
      return e.second.find("/cxiosync-loopbus-") != std::string::npos;
    });
    std::erase_if(before(), [](const auto& e) {
      return e.second.find("/cxiosync-loopbus-") != std::string::npos;
    });
    for (const auto& [name, file] : now) {
      if (!before().count(name))
        ADD_FAILURE() << "loop device appeared during the suite: " << name << " " << file;
    }
    std::error_code ec;
    fs::remove_all(fs::path(env().runDir).parent_path(), ec);
  }
  void SetUp() override {
    if (!skipReason().empty()) GTEST_SKIP() << skipReason();
  }
  void TearDown() override {
    if (!skipReason().empty()) return;
    env().stopServer();
    EXPECT_EQ(ours(), (std::map<std::string, std::string>{}))
        << "the test left loop devices behind (detached now)";
    detachOurs();
  }
  // Bound devices backed by a file of this process's data directory.
  static std::map<std::string, std::string> ours() {
    auto all = boundLoops();
    std::erase_if(all, [](const auto& e) { return e.second.rfind(env().dataDir, 0) != 0; });
    return all;
  }
  // Detaches every device backed by a file of ours (whatever a test left behind).
  static void detachOurs() {
    for (const auto& [name, file] : boundLoops()) {
      if (file.rfind(env().dataDir, 0) != 0) continue;
      int fd = open(("/dev/" + name).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        ioctl(fd, LOOP_CLR_FD, 0);
        close(fd);
      }
    }
    for (int i = 0; i < 100; ++i) {
      bool left = false;
      for (const auto& [name, file] : boundLoops()) left |= file.rfind(env().dataDir, 0) == 0;
      if (!left) return;
      std::this_thread::sleep_for(20ms);
    }
  }
  void serve(const std::vector<std::string>& extra = {}) {
    ASSERT_TRUE(env().startServer(extra)) << "test server did not take the name";
  }
  static std::string image(const std::string& name, off_t size = 16 << 20) {
    std::string p = env().dataDir + "/" + name;
    int fd = open(p.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, size), 0);
    close(fd);
    return p;
  }
  static RunResult ctl(std::vector<std::string> args) {
    std::vector<std::string> argv = {kCtl, "--bus=" + env().address(), "--no-pager"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }
  static std::unique_ptr<sdbus::IConnection> conn() {
    return sdbus::createSessionBusConnectionWithAddress(env().address());
  }
  // LoopSetup with a raw fd and options: (error name or "", object path, device fd).
  struct Setup {
    std::string error, path;
    int deviceFd = -1;
  };
  static Setup rawSetup(int fd, const Opts& options) {
    Setup s;
    auto c = conn();
    auto proxy = compat::createProxy(*c, "org.cxiosync1", "/org/cxiosync1");
    try {
      sdbus::ObjectPath path;
      sdbus::UnixFd devFd;
      proxy->callMethod("LoopSetup")
          .onInterface("org.cxiosync1.Manager")
          .withArguments(sdbus::UnixFd(fd), options)
          .storeResultsTo(path, devFd);
      s.path = path;
      s.deviceFd = devFd.release();
    } catch (const sdbus::Error& e) {
      s.error = e.getName();
    }
    return s;
  }
  template <class... Args>
  static std::string rawLoopCall(const std::string& path, const std::string& method,
                                 Args&&... args) {
    auto c = conn();
    auto proxy = compat::createProxy(*c, "org.cxiosync1", path);
    try {
      proxy->callMethod(method).onInterface("org.cxiosync1.Loop").withArguments(args...);
      return "";
    } catch (const sdbus::Error& e) {
      return e.getName();
    }
  }
  static std::string jsonProblems(const std::vector<std::string>& docs) {
    std::string errs;
    for (const auto& d : docs) {
      std::string path = ::testing::TempDir() + "/loop-json-check.json";
      std::ofstream(path) << d;
      auto r = run(
          {"/usr/bin/env", "python3", "-c", "import json,sys; json.load(open(sys.argv[1]))", path});
      if (r.rc != 0) errs += r.err + " in: " + d + "\n";
    }
    return errs;
  }
};

TEST_F(DbusLoop, AddListShowSetDetachThroughTheCli) {
  serve();
  std::string img = image("a.img");
  auto add = ctl({"loop", "add", img, "--json=short"});
  ASSERT_EQ(add.rc, 0) << add.err;
  std::string name = jsonString(add.out, "name");
  ASSERT_FALSE(name.empty()) << add.out;
  EXPECT_EQ(sysLoop(name, "backing_file"), img);
  EXPECT_NE(add.out.find("\"direct_io\":"), std::string::npos) << add.out;
  EXPECT_NE(add.out.find("\"direct_io_mode\":\"auto\""), std::string::npos) << add.out;
  EXPECT_NE(add.out.find("\"setup_by_uid\":0"), std::string::npos) << add.out;
  // The effective state is what sysfs says.
  const bool dio = sysLoop(name, "dio") == "1";
  EXPECT_NE(add.out.find(std::string("\"direct_io\":") + (dio ? "true" : "false")),
            std::string::npos);

  auto list = ctl({"loop", "list", "--json=short"});
  ASSERT_EQ(list.rc, 0) << list.err;
  EXPECT_NE(list.out.find("\"name\":\"" + name + "\""), std::string::npos) << list.out;
  auto show = ctl({"loop", "show", "/dev/" + name, "--json=pretty"});
  ASSERT_EQ(show.rc, 0) << show.err;
  auto all = ctl({"loop", "list", "--all", "--json=short"});
  EXPECT_EQ(all.rc, 0) << all.err;
  EXPECT_EQ(jsonProblems({add.out, list.out, show.out, all.out}), "");

  auto text = ctl({"loop", "list"});
  EXPECT_EQ(text.rc, 0);
  for (const char* col :
       {"NAME", "BACK-FILE", "OFFSET", "SIZELIMIT", "RO", "AUTOCLEAR", "DIO", "LOG-SEC", "OWNER"}) {
    EXPECT_NE(text.out.find(col), std::string::npos) << col << "\n" << text.out;
  }
  EXPECT_NE(text.out.find("/dev/" + name), std::string::npos) << text.out;
  auto showText = ctl({"loop", "show", name});
  EXPECT_NE(showText.out.find("Direct I/O: " + std::string(dio ? "on" : "off")), std::string::npos)
      << showText.out;

  auto off = ctl({"loop", "set", name, "--direct-io=off", "--json=short"});
  ASSERT_EQ(off.rc, 0) << off.err;
  EXPECT_EQ(sysLoop(name, "dio"), "0");
  EXPECT_NE(off.out.find("\"direct_io\":false"), std::string::npos) << off.out;
  if (dio) {
    auto on = ctl({"loop", "set", name, "--direct-io=on"});
    EXPECT_EQ(on.rc, 0) << on.err;
    EXPECT_EQ(sysLoop(name, "dio"), "1");
  }
  EXPECT_EQ(ctl({"loop", "set", name, "--capacity"}).rc, 0);

  auto det = ctl({"loop", "detach", name, "--json=short"});
  ASSERT_EQ(det.rc, 0) << det.err;
  // lazy only when something (udev's blkid) still holds the device: then it goes on close.
  EXPECT_TRUE(det.out == "{\"device\":\"/dev/" + name + "\",\"detached\":true,\"lazy\":false}\n" ||
              det.out == "{\"device\":\"/dev/" + name + "\",\"detached\":false,\"lazy\":true}\n")
      << det.out;
  EXPECT_TRUE(goneSoon(name));
  EXPECT_EQ(ctl({"loop", "show", name}).rc, 1) << "gone";
  EXPECT_TRUE(env().serverAlive());
}

// Backend, workers and queue depth: set at setup and live, read back from sysfs, shown by
// cxiosyncctl (text and JSON), NotSupported where the kernel loop has no such knob.
TEST_F(DbusLoop, WorkersQueueDepthAndBackendThroughTheBusAndTheCli) {
  serve();
  std::string img = image("qd.img");
  auto add = ctl({"loop", "add", img, "--backend=kernel", "--queue-depth", "32", "--json=short"});
  ASSERT_EQ(add.rc, 0) << add.err;
  const std::string name = jsonString(add.out, "name");
  ASSERT_FALSE(name.empty()) << add.out;
  EXPECT_EQ(slurp("/sys/block/" + name + "/queue/nr_requests"), "32");
  EXPECT_NE(add.out.find("\"backend\":\"kernel\",\"workers\":1,\"queue_depth\":32"),
            std::string::npos)
      << add.out;

  auto text = ctl({"loop", "list"});
  ASSERT_EQ(text.rc, 0) << text.err;
  for (const char* col : {"BACKEND", "WORKERS", "QDEPTH"})
    EXPECT_NE(text.out.find(col), std::string::npos) << col << "\n" << text.out;
  auto showText = ctl({"loop", "show", name});
  EXPECT_NE(showText.out.find("Queue depth: 32"), std::string::npos) << showText.out;
  EXPECT_NE(showText.out.find("Backend: kernel"), std::string::npos) << showText.out;

  auto set = ctl({"loop", "set", name, "--queue-depth=64", "--json=short"});
  ASSERT_EQ(set.rc, 0) << set.err;
  EXPECT_EQ(slurp("/sys/block/" + name + "/queue/nr_requests"), "64");
  EXPECT_NE(set.out.find("\"queue_depth\":64"), std::string::npos) << set.out;
  // Beyond the loop module's hw_queue_depth (128 unless changed): refused, unchanged.
  const std::string hw = slurp("/sys/module/loop/parameters/hw_queue_depth");
  if (!hw.empty() && std::stoul(hw) < 4096) {
    auto big = ctl({"loop", "set", name, "--queue-depth=4096"});
    EXPECT_EQ(big.rc, 2) << big.err;
    EXPECT_NE(big.err.find("hw_queue_depth"), std::string::npos) << big.err;
    EXPECT_EQ(slurp("/sys/block/" + name + "/queue/nr_requests"), "64");
  }

  // The kernel loop has one worker per issuing cgroup: no per-device count to set.
  auto workers = ctl({"loop", "set", name, "--workers=4"});
  EXPECT_EQ(workers.rc, 1) << workers.err;
  EXPECT_NE(workers.err.find("no worker count"), std::string::npos) << workers.err;
  const std::string path = "/org/cxiosync1/loop/" + name;
  EXPECT_EQ(rawLoopCall(path, "SetWorkers", uint32_t{4}, Opts{}),
            "org.cxiosync1.Error.NotSupported");
  EXPECT_EQ(rawLoopCall(path, "SetWorkers", uint32_t{0}, Opts{}),
            "org.cxiosync1.Error.InvalidArgument");
  EXPECT_EQ(rawLoopCall(path, "SetQueueDepth", uint32_t{16}, Opts{}), "");

  auto c = conn();
  auto proxy = compat::createProxy(*c, "org.cxiosync1", path);
  std::map<std::string, sdbus::Variant> props;
  proxy->callMethod("GetAll")
      .onInterface("org.freedesktop.DBus.Properties")
      .withArguments(std::string("org.cxiosync1.Loop"))
      .storeResultsTo(props);
  EXPECT_EQ(props["Backend"].get<std::string>(), "kernel");
  EXPECT_EQ(props["Workers"].get<uint32_t>(), 1u);
  EXPECT_EQ(props["QueueDepth"].get<uint32_t>(), 16u);
  EXPECT_EQ(props["RequestDepth"].get<uint32_t>(), 16u);
  EXPECT_FALSE(props["WorkersSettable"].get<bool>());
  EXPECT_TRUE(props["QueueDepthSettable"].get<bool>());
  EXPECT_EQ(ctl({"loop", "detach", name}).rc, 0);
  EXPECT_TRUE(goneSoon(name));

  // Workers the kernel loop cannot have: InvalidArgument, nothing created.
  const auto loopsBefore = ours();
  int fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  auto k = rawSetup(fd, Opts{{"backend", sdbus::Variant(std::string("kernel"))},
                             {"workers", sdbus::Variant(uint32_t{4})}});
  EXPECT_EQ(k.error, "org.cxiosync1.Error.InvalidArgument");
  auto q = rawSetup(fd, Opts{{"backend", sdbus::Variant(std::string("nbd"))},
                             {"queue_depth", sdbus::Variant(uint32_t{32})}});
  EXPECT_NE(q.error, "") << "queue_depth is a kernel loop setting";
  if (q.deviceFd >= 0) close(q.deviceFd);
  close(fd);
  EXPECT_EQ(ours(), loopsBefore);
}

// A live change of the queue depth is announced: PropertiesChanged on the Loop object with
// the value read back.
TEST_F(DbusLoop, SetQueueDepthEmitsPropertiesChanged) {
  serve();
  std::string img = image("pc.img");
  int fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  auto s = rawSetup(fd, Opts{});
  close(fd);
  ASSERT_EQ(s.error, "");
  close(s.deviceFd);
  const std::string name = s.path.substr(s.path.rfind('/') + 1);
  auto c = conn();
  auto proxy = compat::createProxy(*c, "org.cxiosync1", s.path);
  std::map<std::string, sdbus::Variant> seen;
  proxy->uponSignal("PropertiesChanged")
      .onInterface("org.freedesktop.DBus.Properties")
      .call([&](const std::string& iface, const std::map<std::string, sdbus::Variant>& changed,
                const std::vector<std::string>&) {
        if (iface == "org.cxiosync1.Loop") seen = changed;
      });
  compat::finishSubscriptions(*proxy);
  EXPECT_EQ(rawLoopCall(s.path, "SetQueueDepth", uint32_t{48}, Opts{}), "");
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (seen.empty() && std::chrono::steady_clock::now() < deadline) {
    while (compat::processPending(*c)) {
    }
    auto pd = compat::pollData(*c);
    struct pollfd p[2] = {{pd.fd, pd.events, 0}, {pd.eventFd, POLLIN, 0}};
    poll(p, 2, 100);
  }
  ASSERT_TRUE(seen.count("QueueDepth")) << "no PropertiesChanged with QueueDepth";
  EXPECT_EQ(seen["QueueDepth"].get<uint32_t>(), 48u);
  EXPECT_EQ(seen["Workers"].get<uint32_t>(), 1u);
  EXPECT_EQ(slurp("/sys/block/" + name + "/queue/nr_requests"), "48");
  EXPECT_EQ(rawLoopCall(s.path, "Detach", Opts{}), "");
  EXPECT_TRUE(goneSoon(name));
}

// Partition scanning parses the caller's bytes in the kernel: root only. A non-root caller
// (allowed by polkit) gets a device without it, and no handle on the device at all (issue 26:
// a kept fd on /dev/loopN or /dev/nbdN reaches whatever is attached there later): device_fd
// is /dev/null. Autoclear, which needs that handle, is refused for it. Root gets both.
TEST_F(DbusLoop, PartscanIsOffAndNoDeviceHandleForANonRootCaller) {
  serve({"--as-uid=65534", "--polkit=allow"});
  std::string img = image("pscan.img");
  int fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  auto s = rawSetup(fd, Opts{{"partscan", sdbus::Variant(true)}});
  close(fd);
  ASSERT_EQ(s.error, "");
  const std::string name = s.path.substr(s.path.rfind('/') + 1);
  EXPECT_EQ(sysLoop(name, "partscan"), "0") << "partscan forced off for uid 65534";
  ASSERT_GE(s.deviceFd, 0);
  struct stat st {
  }, null{};
  ASSERT_EQ(fstat(s.deviceFd, &st), 0);
  ASSERT_EQ(stat("/dev/null", &null), 0);
  EXPECT_FALSE(S_ISBLK(st.st_mode)) << "uid 65534 got a handle on the device";
  EXPECT_TRUE(S_ISCHR(st.st_mode) && st.st_rdev == null.st_rdev) << "device_fd is /dev/null";
  close(s.deviceFd);
  EXPECT_EQ(rawLoopCall(s.path, "Detach", Opts{}), "");
  EXPECT_TRUE(goneSoon(name));
  const auto before = boundLoops();
  fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  auto ac = rawSetup(fd, Opts{{"autoclear", sdbus::Variant(true)}});
  close(fd);
  EXPECT_EQ(ac.error, "org.cxiosync1.Error.AccessDenied") << "autoclear without a handle";
  if (ac.deviceFd >= 0) close(ac.deviceFd);
  EXPECT_EQ(boundLoops(), before) << "nothing was set up";
  env().stopServer();
  // Root keeps it.
  serve();
  fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  auto r = rawSetup(fd, Opts{{"partscan", sdbus::Variant(true)}});
  close(fd);
  ASSERT_EQ(r.error, "");
  const std::string rootName = r.path.substr(r.path.rfind('/') + 1);
  EXPECT_EQ(sysLoop(rootName, "partscan"), "1");
  struct stat rootSt {};
  ASSERT_EQ(fstat(r.deviceFd, &rootSt), 0);
  EXPECT_TRUE(S_ISBLK(rootSt.st_mode)) << "root gets a handle on the device";
  EXPECT_EQ(fcntl(r.deviceFd, F_GETFL) & O_ACCMODE, O_RDONLY);
  close(r.deviceFd);
  EXPECT_EQ(rawLoopCall(r.path, "Detach", Opts{}), "");
  EXPECT_TRUE(goneSoon(rootName));
}

// Ownership is of one attach (diskseq), not of a device number plus a file: detached behind
// cxiosync's back and attached again by someone else, to the same file, the device is
// foreign. Before diskseq was recorded, the same dev/inode made it "ours" again.
TEST_F(DbusLoop, ADeviceReattachedBySomeoneElseIsNotOurs) {
  serve();
  std::string img = image("reattach.img");
  auto add = ctl({"loop", "add", img, "--json=short"});
  ASSERT_EQ(add.rc, 0) << add.err;
  const std::string name = jsonString(add.out, "name");
  ASSERT_FALSE(name.empty());
  if (!fs::exists("/sys/block/" + name + "/diskseq")) {
    EXPECT_EQ(ctl({"loop", "detach", name}).rc, 0);
    EXPECT_TRUE(goneSoon(name));
    GTEST_SKIP() << "no diskseq (Linux < 5.15)";
  }
  EXPECT_NE(ctl({"loop", "show", name, "--json=short"}).out.find("\"foreign\":false"),
            std::string::npos);
  // Someone else: LOOP_CLR_FD, then the same file attached to the same device.
  {
    int dev = open(("/dev/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(dev, 0);
    ASSERT_EQ(ioctl(dev, LOOP_CLR_FD, 0), 0);
    close(dev);
  }
  ASSERT_TRUE(goneSoon(name));
  auto ls = run({"/sbin/losetup", "/dev/" + name, img});
  if (ls.rc != 0) GTEST_SKIP() << "losetup failed: " << ls.err;
  // The object's properties are cached for up to one second (loop_server.h).
  std::this_thread::sleep_for(1100ms);
  auto show = ctl({"loop", "show", name, "--json=short"});
  EXPECT_EQ(show.rc, 0) << show.err;
  EXPECT_NE(show.out.find("\"foreign\":true"), std::string::npos) << show.out;
  auto det = ctl({"loop", "detach", name});
  EXPECT_EQ(det.rc, 4) << "not ours: root needs --force\n" << det.err;
  EXPECT_EQ(ctl({"loop", "detach", name, "--force"}).rc, 0);
  EXPECT_TRUE(goneSoon(name));
}

TEST_F(DbusLoop, PropertiesAndIntrospectionOfALoopObject) {
  serve();
  std::string img = image("p.img");
  int fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  auto s = rawSetup(fd, Opts{{"direct_io", sdbus::Variant(std::string("off"))},
                             {"block_size", sdbus::Variant(uint32_t{4096})}});
  close(fd);
  ASSERT_EQ(s.error, "");
  ASSERT_GE(s.deviceFd, 0) << "LoopSetup returns a handle on the device";
  struct stat st {};
  ASSERT_EQ(fstat(s.deviceFd, &st), 0);
  EXPECT_TRUE(S_ISBLK(st.st_mode));
  EXPECT_EQ(fcntl(s.deviceFd, F_GETFL) & O_ACCMODE, O_RDONLY) << "a read-only handle";
  close(s.deviceFd);
  const std::string name = s.path.substr(s.path.rfind('/') + 1);
  auto c = conn();
  auto proxy = compat::createProxy(*c, "org.cxiosync1", s.path);
  std::map<std::string, sdbus::Variant> props;
  proxy->callMethod("GetAll")
      .onInterface("org.freedesktop.DBus.Properties")
      .withArguments(std::string("org.cxiosync1.Loop"))
      .storeResultsTo(props);
  EXPECT_EQ(props["Device"].get<std::string>(), "/dev/" + name);
  EXPECT_EQ(props["BackingFile"].get<std::string>(), img);
  EXPECT_FALSE(props["DirectIO"].get<bool>());
  EXPECT_EQ(props["DirectIOMode"].get<std::string>(), "off");
  EXPECT_EQ(props["BlockSize"].get<uint32_t>(), 4096u);
  EXPECT_EQ(props["BlockSizeSource"].get<std::string>(), "caller");
  EXPECT_EQ(props["SetupByUid"].get<uint32_t>(), 0u);
  EXPECT_FALSE(props["Foreign"].get<bool>());
  EXPECT_FALSE(props["ReadOnly"].get<bool>());
  EXPECT_EQ(props["Size"].get<uint64_t>(), 16u << 20);

  std::string xml;
  proxy->callMethod("Introspect")
      .onInterface("org.freedesktop.DBus.Introspectable")
      .storeResultsTo(xml);
  std::string path = ::testing::TempDir() + "/loop-introspected.xml";
  std::ofstream(path) << xml;
  auto r = run({"/usr/bin/env", "python3", kDir + "/introspect_normalize.py", kIdl, path,
                "org.cxiosync1.Loop"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("method ", 0) != 0) continue;
    EXPECT_NE(l.find("in options:a{sv}"), std::string::npos) << l;
  }
  EXPECT_EQ(rawLoopCall(s.path, "Detach", Opts{}), "");
  EXPECT_TRUE(goneSoon(name));
}

TEST_F(DbusLoop, AReadOnlyFdYieldsAReadOnlyDevice) {
  serve();
  std::string img = image("ro.img");
  int fd = open(img.c_str(), O_RDONLY | O_CLOEXEC);
  auto s = rawSetup(fd, Opts{});  // read_only not asked for
  close(fd);
  ASSERT_EQ(s.error, "");
  close(s.deviceFd);
  const std::string name = s.path.substr(s.path.rfind('/') + 1);
  EXPECT_EQ(slurp("/sys/block/" + name + "/ro"), "1");
  EXPECT_EQ(rawLoopCall(s.path, "Detach", Opts{}), "");
  // The CLI opens the file read-only with --read-only.
  auto add = ctl({"loop", "add", img, "--read-only", "--json=short"});
  ASSERT_EQ(add.rc, 0) << add.err;
  EXPECT_NE(add.out.find("\"read_only\":true"), std::string::npos) << add.out;
  std::string n2 = jsonString(add.out, "name");
  EXPECT_EQ(slurp("/sys/block/" + n2 + "/ro"), "1");
  EXPECT_EQ(ctl({"loop", "detach", n2}).rc, 0);
  // Sizes through the policy parser, as cxiosync-loop (1.5M was refused by the CLI).
  auto part = ctl({"loop", "add", img, "--read-only", "--size", "1.5M", "--json=short"});
  ASSERT_EQ(part.rc, 0) << part.err;
  EXPECT_NE(part.out.find("\"size_limit\":1572864"), std::string::npos) << part.out;
  EXPECT_EQ(ctl({"loop", "detach", jsonString(part.out, "name")}).rc, 0);
}

TEST_F(DbusLoop, BadOptionsAreInvalidArgumentAndCreateNothing) {
  serve();
  std::string img = image("bad.img");
  const auto loopsBefore = ours();
  int fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  const std::string kInvalid = "org.cxiosync1.Error.InvalidArgument";
  for (const Opts& o : std::vector<Opts>{
           {{"bogus", sdbus::Variant(true)}},
           {{"read_only", sdbus::Variant(std::string("yes"))}},
           {{"offset", sdbus::Variant(uint32_t{4096})}},  // must be t
           {{"block_size", sdbus::Variant(uint32_t{1000})}},
           {{"block_size", sdbus::Variant(uint32_t{256})}},
           {{"direct_io", sdbus::Variant(std::string("maybe"))}},
           {{"force", sdbus::Variant(true)}},
           {{"server_cgroup", sdbus::Variant(std::string("tenant"))}},
           {{"server_cgroup", sdbus::Variant(std::string(""))}},
           {{"server_cgroup", sdbus::Variant(std::string("caller"))},
            {"backend", sdbus::Variant(std::string("kernel"))}},
       }) {
    auto s = rawSetup(fd, o);
    EXPECT_EQ(s.error, kInvalid) << o.begin()->first;
    if (s.deviceFd >= 0) close(s.deviceFd);
  }
  // The kernel's refusal: offset past the end of the file, direct I/O "on" on a misaligned
  // offset. InvalidArgument too, and nothing left behind.
  auto past = rawSetup(fd, Opts{{"offset", sdbus::Variant(uint64_t{1} << 40)}});
  EXPECT_EQ(past.error, kInvalid);
  close(fd);
  int wo = open(img.c_str(), O_WRONLY | O_CLOEXEC);
  EXPECT_EQ(rawSetup(wo, Opts{}).error, kInvalid) << "a write-only fd";
  close(wo);
  EXPECT_EQ(ctl({"loop", "add", img, "--direct-io=maybe"}).rc, 2);
  EXPECT_EQ(ctl({"loop", "add", img, "--block-size", "1000"}).rc, 2);
  EXPECT_EQ(ctl({"loop", "add", img, "--autoclear"}).rc, 2) << "autoclear needs a command";
  EXPECT_EQ(ctl({"loop", "add", img, "--offset", "1T"}).rc, 2);
  EXPECT_EQ(ctl({"loop", "add", img, "--server-cgroup=tenant"}).rc, 2);
  EXPECT_EQ(ctl({"loop", "add", env().dataDir + "/missing.img"}).rc, 1);
  EXPECT_EQ(ctl({"loop", "set", "loop0"}).rc, 2) << "nothing to change";
  EXPECT_EQ(ctl({"loop", "show", "sda"}).rc, 2);
  EXPECT_EQ(ctl({"list", "--all"}).rc, 2) << "loop options only with loop";
  EXPECT_EQ(ours(), loopsBefore);
  EXPECT_TRUE(env().serverAlive());
}

TEST_F(DbusLoop, UnknownDeviceIsNoSuchDevice) {
  serve();
  auto r = ctl({"loop", "show", "loop99999"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("No loop device loop99999"), std::string::npos) << r.err;
  EXPECT_EQ(ctl({"loop", "detach", "loop99999"}).rc, 1);
  EXPECT_EQ(ctl({"loop", "set", "loop99999", "--capacity"}).rc, 1);
  // A device that goes away behind the daemon's back: its object answers NoSuchDevice, then
  // disappears.
  std::string img = image("gone.img");
  int fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  auto s = rawSetup(fd, Opts{});
  close(fd);
  ASSERT_EQ(s.error, "");
  close(s.deviceFd);
  const std::string name = s.path.substr(s.path.rfind('/') + 1);
  int dev = open(("/dev/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(dev, 0);
  ASSERT_EQ(ioctl(dev, LOOP_CLR_FD, 0), 0);
  close(dev);
  for (int i = 0; i < 100 && boundLoops().count(name); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(rawLoopCall(s.path, "SetDirectIO", true, Opts{}), "org.cxiosync1.Error.NoSuchDevice");
  // The object goes once the server is done with that batch of calls.
  std::string second;
  for (int i = 0; i < 100; ++i) {
    second = rawLoopCall(s.path, "SetCapacity", Opts{});
    if (second != "org.cxiosync1.Error.NoSuchDevice") break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(second, "org.freedesktop.DBus.Error.UnknownObject");
}

TEST_F(DbusLoop, ForeignDevicesNeedRootWithForce) {
  serve();
  std::string img = image("foreign.img");
  auto ls = run({"/sbin/losetup", "--find", "--show", img});
  if (ls.rc != 0) GTEST_SKIP() << "losetup failed: " << ls.err;
  std::string name = ls.out.substr(ls.out.rfind('/') + 1);
  while (!name.empty() && name.back() == '\n') name.pop_back();
  auto list = ctl({"loop", "list", "--json=short"});
  EXPECT_EQ(list.out.find("\"" + name + "\""), std::string::npos) << "foreign only with --all";
  auto all = ctl({"loop", "list", "--all", "--json=short"});
  EXPECT_NE(all.out.find("\"name\":\"" + name + "\""), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("\"foreign_owner\":\"manual\""), std::string::npos) << all.out;
  auto refused = ctl({"loop", "detach", name});
  EXPECT_EQ(refused.rc, 4) << refused.err;
  EXPECT_NE(refused.err.find("not set up by cxiosync"), std::string::npos) << refused.err;
  EXPECT_EQ(boundLoops().count(name), 1u);
  EXPECT_EQ(ctl({"loop", "detach", name, "--force"}).rc, 0);
  EXPECT_TRUE(goneSoon(name));
}

TEST_F(DbusLoop, ANonRootCallerIsRefused) {
  serve({"--as-uid=65534"});  // no polkit on this bus: root only
  std::string img = image("nobody.img");
  const auto loopsBefore = ours();
  auto r = ctl({"loop", "add", img});
  EXPECT_EQ(r.rc, 4) << r.err;
  EXPECT_NE(r.err.find("org.cxiosync1.loop-setup"), std::string::npos) << r.err;
  EXPECT_EQ(ours(), loopsBefore);
  EXPECT_EQ(ctl({"loop", "list", "--all"}).rc, 0) << "reads stay open";
  env().stopServer();
  // A device root set up: nobody may not touch it (loop-modify-others / -delete-others).
  serve();
  auto add = ctl({"loop", "add", img, "--json=short"});
  ASSERT_EQ(add.rc, 0) << add.err;
  std::string name = jsonString(add.out, "name");
  env().stopServer();
  serve({"--as-uid=65534"});
  auto det = ctl({"loop", "detach", name});
  EXPECT_EQ(det.rc, 4) << det.err;
  EXPECT_NE(det.err.find("loop-delete-others"), std::string::npos) << det.err;
  auto set = ctl({"loop", "set", name, "--direct-io=off"});
  EXPECT_EQ(set.rc, 4) << set.err;
  EXPECT_NE(set.err.find("loop-modify-others"), std::string::npos) << set.err;
  EXPECT_EQ(boundLoops().count(name), 1u);
  env().stopServer();
  serve({"--as-uid=65534", "--polkit=allow"});
  EXPECT_EQ(ctl({"loop", "detach", name}).rc, 0) << "polkit said yes";
  EXPECT_TRUE(goneSoon(name));
}

TEST_F(DbusLoop, TheReturnedHandleKeepsAnAutoclearDevice) {
  serve();
  std::string img = image("auto.img");
  int fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  auto s = rawSetup(fd, Opts{{"autoclear", sdbus::Variant(true)}});
  close(fd);
  ASSERT_EQ(s.error, "");
  const std::string name = s.path.substr(s.path.rfind('/') + 1);
  EXPECT_EQ(sysLoop(name, "autoclear"), "1");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(boundLoops().count(name), 1u) << "held by the returned handle";
  close(s.deviceFd);
  bool gone = false;
  for (int i = 0; i < 150 && !gone; ++i) {
    gone = boundLoops().count(name) == 0;
    if (!gone) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(gone) << "the kernel detached it on the last close";
  // The CLI holds it while a command runs.
  auto r = ctl({"loop", "add", img, "--autoclear", "--", "/bin/sh", "-c",
                "cat /sys/block/$(basename {})/loop/autoclear"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\n1\n"), std::string::npos) << r.out;
}

// Every fd the server receives (sdbus::UnixFd is a dup) is closed, on success and on every
// failure path; so are the device fds it opens. (The total may move by a few: sdbus-c++ keeps
// pseudo-connections for variant messages; those are eventfds, bounded.)
TEST_F(DbusLoop, TheServerLeaksNoFileDescriptors) {
  serve();
  std::string img = image("fds.img");
  auto openFds = [] {
    std::vector<std::string> targets;
    std::error_code ec;
    for (auto it = fs::directory_iterator("/proc/" + std::to_string(env().serverPid()) + "/fd", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      targets.push_back(fs::read_symlink(it->path(), ec).string());
    }
    return targets;
  };
  auto holds = [&](const std::string& what) {
    // The server replies before it drops the request (and its fds): let it settle.
    bool held = true;
    for (int i = 0; i < 100 && held; ++i) {
      held = false;
      for (const auto& t : openFds()) held |= t.find(what) != std::string::npos;
      if (held) std::this_thread::sleep_for(20ms);
    }
    return held;
  };
  const size_t before = openFds().size();
  int fd = open(img.c_str(), O_RDWR | O_CLOEXEC);
  for (int i = 0; i < 10; ++i) {
    auto s = rawSetup(fd, Opts{});
    ASSERT_EQ(s.error, "");
    close(s.deviceFd);
    EXPECT_EQ(rawLoopCall(s.path, "Detach", Opts{}), "");
    EXPECT_EQ(rawSetup(fd, Opts{{"bogus", sdbus::Variant(true)}}).error,
              "org.cxiosync1.Error.InvalidArgument");
    EXPECT_EQ(rawSetup(fd, Opts{{"offset", sdbus::Variant(uint64_t{1} << 40)}}).error,
              "org.cxiosync1.Error.InvalidArgument");
  }
  close(fd);
  EXPECT_FALSE(holds("fds.img")) << "the server still holds the backing file";
  EXPECT_FALSE(holds("/dev/loop")) << "the server still holds a loop device";
  EXPECT_LE(openFds().size(), before + 4) << "bounded, not one per call";
}

// A real non-root caller (setpriv to nobody) on a system-type bus with the shipped policy
// (packaging/org.cxiosync1.conf) and no polkit: the uid comes from the bus driver, not from
// a test override. nobody opens the image itself (read-only: it may read it) and is refused.
TEST_F(DbusLoop, ARealNobodyCallerIsRefusedOnTheSystemPolicyBus) {
  if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "no setpriv";
  std::string dir = fs::path(env().runDir).parent_path() / "sysbus";
  std::string conf = bustest::writeSystemPolicyBusConfig(dir, kDir + "/../..");
  bustest::PrivateBus sys;
  ASSERT_TRUE(sys.startBus(conf));
  chmod((dir + "/bus").c_str(), 0777);
  bool up = sys.startServer(
      {kServer, "--address=" + sys.address(), "--loop-run-dir=" + env().runDir}, 10s);
  std::string img = image("nobody-real.img");
  chmod(img.c_str(), 0644);
  const auto loopsBefore = ours();
  bool probed = false;
  auto asNobody = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {
        "/usr/bin/setpriv",       "--reuid=65534", "--regid=65534",    "--clear-groups", "--", kCtl,
        "--bus=" + sys.address(), "--no-pager",    "--no-ask-password"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  };
  if (up) {
    auto probe = asNobody({"--version", "-q"});
    probed = probe.rc == 0;
    if (probed) {
      auto r = asNobody({"loop", "add", img, "--read-only"});
      EXPECT_EQ(r.rc, 4) << r.err;
      EXPECT_NE(r.err.find("uid 65534"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("org.cxiosync1.loop-setup"), std::string::npos) << r.err;
      auto rw = asNobody({"loop", "add", img});  // nobody cannot open it read-write
      EXPECT_EQ(rw.rc, 4) << rw.err;
      EXPECT_NE(rw.err.find("Cannot open"), std::string::npos) << rw.err;
      EXPECT_EQ(asNobody({"loop", "list", "--all"}).rc, 0) << "reads stay open";
      EXPECT_EQ(ours(), loopsBefore);
    }
  }
  sys.stop();
  ASSERT_TRUE(up) << "server did not start on the system-policy bus";
  if (!probed) GTEST_SKIP() << "nobody cannot run " << kCtl;
}

}  // namespace
