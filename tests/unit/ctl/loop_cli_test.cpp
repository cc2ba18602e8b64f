// SPDX-License-Identifier: GPL-2.0-or-later
// cxiosyncctl loop: argument checks, sizes, device names, rendering; and the LoopSetup
// option parsing the daemon applies (dbus/loop_wire.h). Pure: no bus, no kernel.
#include "dbus/ctl/loop_cli.h"

#include <gtest/gtest.h>

#include "dbus/loop_wire.h"
#include "policy/bytes_text.h"

namespace cxiosync::ctl {
namespace {

Result<Invocation> parse(std::vector<std::string> args) {
  return parseArgs(args);
}

TEST(LoopCli, DeviceNames) {
  EXPECT_EQ(*loopNameArg("loop3"), "loop3");
  EXPECT_EQ(*loopNameArg("/dev/loop3"), "loop3");
  EXPECT_EQ(*loopNameArg("3"), "loop3");
  EXPECT_EQ(*loopNameArg("0"), "loop0");
  EXPECT_EQ(*loopNameArg("nbd0"), "nbd0");
  EXPECT_EQ(*loopNameArg("/dev/nbd12"), "nbd12");
  for (const char* bad : {"", "sda", "loop", "loop03", "nbd", "nbd01", "nbd-1", "nbd1p1", "loop-1",
                          "/dev/sda", "loop3p1", "../loop3", "loop99999999999"}) {
    EXPECT_FALSE(loopNameArg(bad).ok()) << bad;
  }
}

// One size parser everywhere (policy parseSize): `loop add --size 1.5M` was rejected by a
// private parser while `cxiosync-loop add --size 1.5G` worked.
TEST(LoopCli, SizesUseThePolicyParser) {
  auto size = [](const std::string& text) -> Result<uint64_t> {
    auto inv = parseArgs({"loop", "add", "/x.img", "--size", text});
    if (!inv) return inv.error();
    return *inv->options.loop.size;
  };
  EXPECT_EQ(*size("4096"), 4096u);
  EXPECT_EQ(*size("4K"), 4096u);
  EXPECT_EQ(*size("1M"), 1u << 20);
  EXPECT_EQ(*size("1.5M"), 3u << 19);
  EXPECT_EQ(*size("2GiB"), 2ull << 30);
  EXPECT_EQ(*size("1T"), 1ull << 40);
  EXPECT_EQ(*parseArgs({"loop", "add", "/x", "--offset=1.5G"})->options.loop.offset, 3ull << 29);
  for (const char* bad : {"", "K", "-1", "1X", "99999999999999999999", "16777216T"}) {
    auto r = size(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, EINVAL) << bad;
    EXPECT_EQ(r.error().message.rfind("--size: ", 0), 0u) << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(*parseArgs({"loop", "set", "loop1", "--block-size=4K"})->options.loop.blockSize, 4096u);
  auto bs = parseArgs({"loop", "set", "loop1", "--block-size=1000"});
  ASSERT_FALSE(bs.ok());
  EXPECT_NE(bs.error().message.find("--block-size: '1000'"), std::string::npos)
      << bs.error().message;
}

TEST(LoopCli, ArgumentChecks) {
  EXPECT_TRUE(parse({"loop", "add", "/x.img"}).ok());
  auto a = parse({"loop", "add", "/x.img", "--read-only", "--offset=1M", "--size", "2M",
                  "--block-size=4096", "--direct-io=on", "--partscan"});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_TRUE(a->options.loop.readOnly);
  EXPECT_EQ(*a->options.loop.offset, 1u << 20);
  EXPECT_EQ(*a->options.loop.size, 2u << 20);
  EXPECT_EQ(*a->options.loop.blockSize, 4096u);
  EXPECT_EQ(*a->options.loop.directIo, "on");
  EXPECT_EQ(*parse({"loop", "add", "/x", "--direct-io"})->options.loop.directIo, "on");
  auto held = parse({"loop", "add", "/x", "--autoclear", "--", "mount", "-o", "ro", "{}", "/m"});
  ASSERT_TRUE(held.ok()) << held.error().message;
  EXPECT_EQ(held->args.size(), 7u);
  EXPECT_TRUE(parse({"loop", "list", "--all"}).ok());
  EXPECT_TRUE(parse({"loop", "show", "/dev/loop1"}).ok());
  EXPECT_TRUE(parse({"loop", "set", "loop1", "--direct-io=off"}).ok());
  EXPECT_TRUE(parse({"loop", "set", "loop1", "--block-size", "4K", "--capacity"}).ok());
  EXPECT_TRUE(parse({"loop", "detach", "2", "--force"}).ok());
  auto w = parse({"loop", "add", "/x", "--backend=nbd", "--workers", "4", "--nbd-timeout=30"});
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(*w->options.loop.backend, "nbd");
  EXPECT_EQ(*w->options.loop.workers, 4u);
  EXPECT_EQ(*w->options.loop.nbdTimeout, 30u);
  EXPECT_FALSE(w->options.loop.serverCgroup);
  for (const char* where : {"caller", "daemon"}) {
    auto sc =
        parse({"loop", "add", "/x", "--backend=nbd", std::string("--server-cgroup=") + where});
    ASSERT_TRUE(sc.ok()) << sc.error().message;
    EXPECT_EQ(*sc->options.loop.serverCgroup, where);
  }
  auto q = parse({"loop", "set", "loop1", "--queue-depth=64"});
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(*q->options.loop.queueDepth, 64u);
  EXPECT_TRUE(parse({"loop", "set", "nbd0", "--workers=2", "--force"}).ok());
  EXPECT_TRUE(parse({"loop", "add", "/x", "--queue-depth", "32", "--backend", "kernel"}).ok());
  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {"loop"},
           {"loop", "frob"},
           {"loop", "add"},
           {"loop", "add", "/x", "--direct-io=maybe"},
           {"loop", "add", "/x", "--block-size=1000"},
           {"loop", "add", "/x", "--offset=1Q"},
           {"loop", "add", "/x", "--autoclear"},  // needs a command
           {"loop", "add", "/x", "--all"},
           {"loop", "list", "--read-only"},
           {"loop", "list", "extra"},
           {"loop", "show"},
           {"loop", "show", "sda"},
           {"loop", "show", "loop1", "--force"},
           {"loop", "set", "loop1"},
           {"loop", "set", "loop1", "--direct-io=auto"},
           {"loop", "set", "loop1", "--read-only", "--capacity"},
           {"loop", "detach", "loop1", "--capacity"},
           {"loop", "add", "/x", "--backend=ublk"},
           {"loop", "add", "/x", "--workers=0"},
           {"loop", "add", "/x", "--workers=17"},
           {"loop", "add", "/x", "--workers=4x"},
           {"loop", "add", "/x", "--workers=-1"},
           {"loop", "add", "/x", "--queue-depth=2"},
           {"loop", "set", "loop1", "--backend=nbd"},
           {"loop", "set", "loop1", "--nbd-timeout=3"},
           {"loop", "add", "/x", "--server-cgroup=tenant"},
           {"loop", "add", "/x", "--server-cgroup="},
           {"loop", "set", "nbd0", "--server-cgroup=caller"},
           {"loop", "list", "--server-cgroup=daemon"},
           {"isolate", "cg", "on", "--server-cgroup=caller"},
           {"loop", "list", "--workers=2"},
           {"loop", "detach", "loop1", "--queue-depth=8"},
           {"status", "--workers=2"},
           {"list", "--all"},
           {"show", "/a", "--force"},
       }) {
    std::string joined;
    for (const auto& s : bad) joined += s + " ";
    auto r = parse(bad);
    EXPECT_FALSE(r.ok()) << joined;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, EINVAL) << joined;
    }
  }
}

dbus::LoopInfo sample() {
  dbus::LoopInfo d;
  d.name = "loop3";
  d.device = "/dev/loop3";
  d.backingFile = "/srv/img/a.img";
  d.sizeBytes = 16 << 20;
  d.blockSize = 512;
  d.directIo = false;
  d.directIoMode = DirectIoMode::Auto;
  d.directIoNote = "tmpfs does not support direct I/O";
  d.blockSizeSource = "default";
  d.setupByUid = 0;
  d.foreign = false;
  d.requestDepth = 128;
  return d;
}

TEST(LoopCli, Rendering) {
  auto d = sample();
  auto text = loopsText({d}, true, false);
  EXPECT_NE(text.find("NAME"), std::string::npos);
  EXPECT_NE(text.find("LOG-SEC"), std::string::npos);
  EXPECT_NE(text.find("0!"), std::string::npos) << text;
  EXPECT_NE(text.find("loop3: direct I/O off: tmpfs"), std::string::npos) << text;
  EXPECT_NE(text.find("1 loop device listed."), std::string::npos) << text;
  EXPECT_EQ(loopsText({d}, false, false).find("NAME"), std::string::npos);
  auto j = loopJson(d).dump(false);
  EXPECT_EQ(j.rfind("{\"name\":\"loop3\",\"device\":\"/dev/loop3\"", 0), 0u) << j;
  EXPECT_NE(j.find("\"setup_by_uid\":0"), std::string::npos);
  EXPECT_NE(j.find("\"foreign_owner\":null"), std::string::npos);
  d.foreign = true;
  d.foreignOwner = "snap";
  d.setupByUid = dbus::kUnknownUid;
  j = loopJson(d).dump(false);
  EXPECT_NE(j.find("\"setup_by_uid\":null"), std::string::npos) << j;
  EXPECT_NE(loopsText({d}, true, false).find("foreign:snap"), std::string::npos);
  EXPECT_NE(loopText(d).find("foreign (snap)"), std::string::npos);
}

// Backend, workers and queue depth: columns of list and show, and JSON keys, all read back.
TEST(LoopCli, BackendWorkersAndQueueDepth) {
  auto d = sample();
  d.backend = BackendKind::Nbd;
  d.name = "nbd0";
  d.device = "/dev/nbd0";
  d.workers = 4;
  d.queueDepth = 128;
  auto text = loopsText({d}, true, false);
  for (const char* h : {"BACKEND", "WORKERS", "QDEPTH"})
    EXPECT_NE(text.find(h), std::string::npos) << text;
  EXPECT_NE(text.find("nbd "), std::string::npos) << text;
  auto show = loopText(d);
  EXPECT_NE(show.find("Workers"), std::string::npos) << show;
  EXPECT_NE(show.find("Queue depth"), std::string::npos) << show;
  auto j = loopJson(d).dump(false);
  EXPECT_NE(j.find("\"backend\":\"nbd\",\"workers\":4,\"queue_depth\":128"), std::string::npos)
      << j;
  EXPECT_NE(j.find("\"workers_settable\":false"), std::string::npos) << j;
  auto list = loopsJson({d}).dump(false);
  EXPECT_NE(list.find("\"workers\":4"), std::string::npos) << list;
  // The nbd server's cgroup (issue 17 item 5): a show line and a JSON key, over the wire too.
  EXPECT_EQ(show.find("Server cgroup"), std::string::npos) << "none: no line";
  d.serverCgroup = "/tenant.slice/job.scope";
  show = loopText(d);
  EXPECT_NE(show.find("Server cgroup"), std::string::npos) << show;
  EXPECT_NE(show.find("/tenant.slice/job.scope"), std::string::npos) << show;
  j = loopJson(d).dump(false);
  EXPECT_NE(j.find("\"server_cgroup\":\"/tenant.slice/job.scope\""), std::string::npos) << j;
  list = loopsJson({d}).dump(false);
  EXPECT_NE(list.find("\"server_cgroup\":\"/tenant.slice/job.scope\""), std::string::npos) << list;
  auto back = dbus::wire::loopFromWire(dbus::wire::toWire(d));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->serverCgroup, d.serverCgroup);
}

TEST(LoopWire, SetupOptions) {
  using V = sdbus::Variant;
  auto ok = dbus::wire::parseLoopSetupOptions({{"read_only", V(true)},
                                               {"offset", V(uint64_t{4096})},
                                               {"size_limit", V(uint64_t{1} << 20)},
                                               {"block_size", V(uint32_t{4096})},
                                               {"direct_io", V(std::string("on"))},
                                               {"autoclear", V(true)},
                                               {"partscan", V(true)},
                                               {"interactive", V(true)}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_TRUE(ok->options.readOnly);
  EXPECT_EQ(ok->options.offset, 4096u);
  EXPECT_EQ(ok->options.directIo, DirectIoMode::On);
  EXPECT_TRUE(ok->interactive);
  // Round trip of what the client sends.
  auto back = dbus::wire::parseLoopSetupOptions(dbus::wire::loopSetupOptionsToWire(*ok));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->options.sizeLimit, 1u << 20);
  // server_cgroup (issue 17 item 5): "" = the default, sent only when asked.
  for (const char* where : {"caller", "daemon"}) {
    auto sc = dbus::wire::parseLoopSetupOptions({{"server_cgroup", V(std::string(where))}});
    ASSERT_TRUE(sc.ok()) << sc.error().message;
    EXPECT_EQ(sc->options.serverCgroup, where);
    auto again = dbus::wire::parseLoopSetupOptions(dbus::wire::loopSetupOptionsToWire(*sc));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->options.serverCgroup, where);
  }
  EXPECT_EQ(dbus::wire::loopSetupOptionsToWire(*ok).count("server_cgroup"), 0u);
  // Whether the daemon asks the bus for the caller's pid: where the server may start in
  // the caller's cgroup.
  dbus::LoopSetupOptions so;
  EXPECT_TRUE(dbus::wire::loopSetupNeedsCallerPid(so, 1000));
  EXPECT_FALSE(dbus::wire::loopSetupNeedsCallerPid(so, 0));
  so.serverCgroup = "caller";
  EXPECT_TRUE(dbus::wire::loopSetupNeedsCallerPid(so, 0));
  so.serverCgroup = "daemon";
  EXPECT_FALSE(dbus::wire::loopSetupNeedsCallerPid(so, 1000));
  so.serverCgroup = "";
  so.backend = BackendKind::Kernel;
  EXPECT_FALSE(dbus::wire::loopSetupNeedsCallerPid(so, 1000));
  for (const auto& bad : std::vector<std::map<std::string, V>>{
           {{"nope", V(true)}},
           {{"force", V(true)}},
           {{"read_only", V(uint32_t{1})}},
           {{"offset", V(uint32_t{1})}},
           {{"block_size", V(uint64_t{4096})}},
           {{"block_size", V(uint32_t{3000})}},
           {{"block_size", V(uint32_t{131072})}},
           {{"direct_io", V(std::string("yes"))}},
           {{"offset", V(uint64_t{1} << 63)}},
           {{"backend", V(std::string("ublk"))}},
           {{"backend", V(true)}},
           {{"workers", V(uint32_t{17})}},
           {{"workers", V(int32_t{4})}},
           {{"queue_depth", V(uint32_t{2})}},
           {{"nbd_timeout", V(uint32_t{100000})}},
           {{"server_cgroup", V(std::string("tenant"))}},
           {{"server_cgroup", V(std::string(""))}},
           {{"server_cgroup", V(true)}},
           {{"server_cgroup", V(std::string("caller"))}, {"backend", V(std::string("kernel"))}},
           // An explicit backend's impossible combinations: refused here, before
           // authorization (they used to reach the backend after it).
           {{"backend", V(std::string("kernel"))}, {"workers", V(uint32_t{2})}},
           {{"backend", V(std::string("nbd"))}, {"offset", V(uint64_t{512})}},
           {{"backend", V(std::string("nbd"))}, {"size_limit", V(uint64_t{512})}},
           {{"backend", V(std::string("nbd"))}, {"autoclear", V(true)}},
           {{"backend", V(std::string("nbd"))}, {"partscan", V(true)}},
           {{"backend", V(std::string("nbd"))}, {"queue_depth", V(uint32_t{32})}},
       }) {
    auto r = dbus::wire::parseLoopSetupOptions(bad);
    EXPECT_FALSE(r.ok()) << bad.begin()->first;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, EINVAL);
    }
  }
  // What only the backend can decide (auto) or what fits the backend asked for passes.
  for (const auto& good : std::vector<std::map<std::string, V>>{
           {{"workers", V(uint32_t{4})}, {"queue_depth", V(uint32_t{32})}},
           {{"backend", V(std::string("kernel"))},
            {"workers", V(uint32_t{1})},
            {"queue_depth", V(uint32_t{32})},
            {"offset", V(uint64_t{512})}},
           {{"backend", V(std::string("nbd"))},
            {"workers", V(uint32_t{16})},
            {"nbd_timeout", V(uint32_t{30})},
            {"autoclear", V(false)}},
       }) {
    auto r = dbus::wire::parseLoopSetupOptions(good);
    EXPECT_TRUE(r.ok()) << r.error().message;
  }
  // Signatures compare as strings (sdbus-c++ 2.x's peekValueType() is a const char*: a `!=`
  // on it compared pointers and refused every option) and the message names what came.
  auto wrong = dbus::wire::parseLoopSetupOptions({{"read_only", V(uint32_t{1})}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("must have type 'b', got 'u'"), std::string::npos)
      << wrong.error().message;
  auto wrongCall = dbus::wire::parseLoopCallOptions({{"all", V(std::string("x"))}}, true);
  ASSERT_FALSE(wrongCall.ok());
  EXPECT_NE(wrongCall.error().message.find("got type 's'"), std::string::npos)
      << wrongCall.error().message;
  EXPECT_TRUE(dbus::wire::parseLoopCallOptions({{"force", V(true)}}, false).ok());
  EXPECT_FALSE(dbus::wire::parseLoopCallOptions({{"force", V(true)}}, true).ok());
  EXPECT_TRUE(dbus::wire::parseLoopCallOptions({{"all", V(true)}}, true).ok());
  EXPECT_FALSE(dbus::wire::parseLoopCallOptions({{"all", V(uint32_t{1})}}, true).ok());
}

TEST(LoopWire, NamesPathsAndUtf8) {
  EXPECT_EQ(dbus::wire::loopObjectPath("loop3"), "/org/cxiosync1/loop/loop3");
  EXPECT_EQ(dbus::wire::loopNameOfPath("/org/cxiosync1/loop/loop3"), "loop3");
  EXPECT_EQ(dbus::wire::loopNameOfPath("/org/cxiosync1/loop/sda"), "");
  auto d = sample();
  auto back = dbus::wire::loopFromWire(dbus::wire::toWire(d));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->name, "loop3");
  EXPECT_EQ(back->directIoNote, d.directIoNote);
  EXPECT_EQ(back->requestDepth, 128u);
  d.workers = 4;
  d.queueDepth = 64;
  d.queueDepthSettable = true;
  back = dbus::wire::loopFromWire(dbus::wire::toWire(d));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->workers, 4u);
  EXPECT_EQ(back->queueDepth, 64u);
  EXPECT_TRUE(back->queueDepthSettable);
  EXPECT_FALSE(back->workersSettable);
  EXPECT_EQ(dbus::wire::loopNameOfPath("/org/cxiosync1/loop/nbd2"), "nbd2");
  EXPECT_EQ(dbus::wire::loopNameOfPath("/org/cxiosync1/loop/nbd02"), "");
  // A backing file's name is any bytes: the wire has the \xNN text form, reversibly.
  d.backingFile = "/srv/caf\xc3\xa9-\xff.img";
  back = dbus::wire::loopFromWire(dbus::wire::toWire(d));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->backingFile, "/srv/caf\xc3\xa9-\\xff.img");
  EXPECT_EQ(bytesFromText(back->backingFile), d.backingFile);
}

}  // namespace
}  // namespace cxiosync::ctl
