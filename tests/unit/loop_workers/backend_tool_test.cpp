// SPDX-License-Identifier: GPL-2.0-or-later
// cxiosync-loop's command lines (daemon/blockdev/devices/backend_tool.h): one parser for
// add and set whichever backend serves the device. Pure parsing: no device is touched.
#include "daemon/blockdev/devices/backend_tool.h"

#include <gtest/gtest.h>

#include <cerrno>

using namespace cxiosync;

namespace {

const std::string kNoSys = "/nonexistent-sys";  // hw_queue_depth unknown: 128 assumed

TEST(LoopToolArgs, AddKernelLoop) {
  auto a =
      parseAddArgs({"--read-only", "-o", "1M", "--size=1.5G", "--block-size", "4K", "--direct-io",
                    "-P", "img", "--autoclear", "--", "mount", "-o", "ro", "{}", "/m"},
                   kNoSys);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->file, "img");
  EXPECT_TRUE(a->setup.loop.readOnly && a->setup.loop.partscan && a->setup.loop.autoclear);
  EXPECT_EQ(a->setup.loop.offset, 1u << 20);
  EXPECT_EQ(a->setup.loop.sizeLimit, 3ull << 29);
  EXPECT_EQ(a->setup.loop.blockSize, 4096u);
  EXPECT_EQ(a->setup.loop.directIo, DirectIoMode::On);
  EXPECT_FALSE(a->backendOptions);
  EXPECT_EQ(a->command, (std::vector<std::string>{"mount", "-o", "ro", "{}", "/m"}));
  EXPECT_EQ(
      parseAddArgs({"--sizelimit=2M", "--sector-size=512", "x"}, kNoSys)->setup.loop.sizeLimit,
      2u << 20);
}

TEST(LoopToolArgs, AddWithBackendOptions) {
  auto a = parseAddArgs({"--backend", "nbd", "--workers=4", "--nbd-timeout", "30", "img"}, kNoSys);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_TRUE(a->backendOptions);
  EXPECT_EQ(a->setup.backend, BackendKind::Nbd);
  EXPECT_EQ(a->setup.workers, 4);
  EXPECT_EQ(a->setup.nbdTimeoutSec, 30u);
  EXPECT_EQ(parseAddArgs({"--queue-depth=32", "img"}, kNoSys)->setup.loop.queueDepth, 32u);
}

TEST(LoopToolArgs, AddErrorsAreOneLineAndNameTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const auto& c : std::vector<Case>{
           {{"--size", "1Q", "img"}, "--size: "},
           {{"--offset"}, "option --offset needs a value"},
           {{"--workers", "", "img"}, "--workers: "},
           {{"--workers", "17", "img"}, "--workers: "},
           {{"--backend=ublk2", "img"}, "--backend: "},
           {{"--queue-depth=1000", "img"}, "--queue-depth: "},
           {{"--nbd-timeout=0", "img"}, "--nbd-timeout: '0' is not a number in 1..3600"},
           {{"--direct-io=maybe", "img"}, "--direct-io: "},
           {{"--frob", "img"}, "unknown option '--frob'"},
           {{"--force", "img"}, "--force does not apply to add"},
           {{"--autoclear=on", "img"}, "--autoclear: takes no value here"},
           {{}, "FILE missing"},
           {{"a", "b"}, "one FILE only"},
           {{"--autoclear", "img"}, "needs a command"},
           {{"--workers=2", "img", "--", "true"}, "cannot be combined"},
       }) {
    auto r = parseAddArgs(c.args, kNoSys);
    std::string joined;
    for (const auto& s : c.args) joined += s + " ";
    ASSERT_FALSE(r.ok()) << joined;
    EXPECT_EQ(r.error().code, EINVAL) << joined;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << joined << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  }
}

// `set DEV --autoclear=bad` exited 2 without a word.
TEST(LoopToolArgs, SetAutoclearBadValueSaysSo) {
  auto r = parseSetArgs({"loop0", "--autoclear=bad"}, kNoSys);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--autoclear: "), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("bad"), std::string::npos) << r.error().message;
  EXPECT_FALSE(parseSetArgs({"loop0", "--autoclear"}, kNoSys).ok()) << "on or off, not bare";
  EXPECT_EQ(*parseSetArgs({"loop0", "--autoclear=off"}, kNoSys)->autoclear, false);
  EXPECT_EQ(*parseSetArgs({"loop0", "--autoclear=on"}, kNoSys)->autoclear, true);
}

TEST(LoopToolArgs, Set) {
  auto s = parseSetArgs(
      {"loop3", "--direct-io=off", "--block-size", "4096", "--capacity", "--force"}, kNoSys);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->dev, "loop3");
  EXPECT_EQ(*s->directIo, false);
  EXPECT_EQ(*s->blockSize, 4096u);
  EXPECT_TRUE(s->capacity && s->force && s->loopSettings() && !s->backendSettings());
  auto w = parseSetArgs({"nbd0", "--workers", "4", "--queue-depth=16"}, kNoSys);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(*w->workers, 4);
  EXPECT_EQ(*w->queueDepth, 16u);
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"loop0"},
           {"--capacity"},
           {"loop0", "loop1", "--capacity"},
           {"loop0", "--direct-io=auto"},
           {"loop0", "--workers=2", "--capacity"},
           {"loop0", "--read-only"},
       }) {
    EXPECT_FALSE(parseSetArgs(bad, kNoSys).ok()) << bad.size();
  }
}

TEST(LoopToolArgs, DeviceCommands) {
  EXPECT_TRUE(parseDeviceArgs("list", {"-a"})->all);
  EXPECT_TRUE(parseDeviceArgs("list", {"--all"})->all);
  auto d = parseDeviceArgs("detach", {"loop2", "--force"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->dev, "loop2");
  EXPECT_TRUE(d->force);
  EXPECT_FALSE(parseDeviceArgs("show", {}).ok());
  EXPECT_FALSE(parseDeviceArgs("show", {"loop1", "--force"}).ok());
  EXPECT_FALSE(parseDeviceArgs("list", {"extra"}).ok());
  EXPECT_FALSE(parseDeviceArgs("detach", {"loop1", "loop2"}).ok());
  EXPECT_TRUE(parseDeviceArgs("reconcile", {}).ok());
}

}  // namespace
