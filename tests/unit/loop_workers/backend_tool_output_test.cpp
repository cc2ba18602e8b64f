// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/devices/backend_tool.h"

#include <gtest/gtest.h>

namespace cxiosync {
namespace {

BlockDeviceInfo nbdDevice() {
  BlockDeviceInfo d;
  d.name = "nbd0";
  d.device = "/dev/nbd0";
  d.backend = BackendKind::Nbd;
  d.backingFile = "/srv/a\xff.img";  // bytes, not UTF-8
  d.sizeBytes = 1 << 20;
  d.workers = 4;
  d.queueDepth = 128;
  d.inFlightMax = 4;
  d.foreign = false;
  d.setupByUid = 1000;
  d.serverPid = 4242;
  d.serverAlive = false;
  d.note = "server dead: I/O fails";
  d.serverCgroup = "/tenant.slice/job.scope";
  d.serverCgroupMode = "caller";
  return d;
}

// The keys and their order are what cxiosync-loop --json printed through JsonWriter; the nbd
// fields come only for nbd devices, and the kernel loop's note after the backend fields.
TEST(BackendTool, JsonRecordsKeepTheirKeysPerBackend) {
  EXPECT_EQ(output::jsonDump(blockInfoTable({nbdDevice()}).rowJson(0), false),
            R"({"name":"/dev/nbd0","back-file":"/srv/a\\xff.img","size":1048576,"ro":false,)"
            R"("direct-io":false,"foreign":false,"setup-by-uid":1000,"backend":"nbd",)"
            R"("workers":4,"queue-depth":128,"in-flight-max":4,"workers-settable-live":false,)"
            R"("server-pid":4242,"server-alive":false,"server-cgroup":"/tenant.slice/job.scope",)"
            R"("note":"server dead: I/O fails"})");
  BlockDeviceInfo k;
  k.name = "loop3";
  k.device = "/dev/loop3";
  k.backend = BackendKind::Kernel;
  k.queueDepth = 16;
  k.note = "direct I/O off: tmpfs";
  EXPECT_EQ(output::jsonDump(blockInfoTable({k}).rowJson(0), false),
            R"({"name":"/dev/loop3","back-file":"","size":0,"ro":false,"direct-io":false,)"
            R"("foreign":true,"setup-by-uid":null,"backend":"kernel","workers":1,)"
            R"("queue-depth":16,"in-flight-max":1,"workers-settable-live":false,)"
            R"("note":"direct I/O off: tmpfs"})");
}

TEST(BackendTool, NbdRowsSayWhoOwnsAndWhetherTheServerLives) {
  std::string text = blockInfoTable({nbdDevice()}).render(true, false);
  EXPECT_EQ(text,
            "NAME       BACKEND  WORKERS  QDEPTH  DIO  RO  OWNER     SERVER            BACK-FILE\n"
            "/dev/nbd0  nbd            4     128    0   0  uid:1000  DEAD server 4242  "
            "/srv/a\\xff.img\n");
}

}  // namespace
}  // namespace cxiosync
