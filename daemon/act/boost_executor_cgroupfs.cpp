// SPDX-License-Identifier: GPL-2.0-or-later
// The production IoMaxAccess: the executor's view of io.max through the sensing layer's
// CgroupFs (dirfd-relative, no symlinks, inode-guarded).
#include "daemon/act/boost_executor.h"
#include "daemon/kernel/cgroup_fs.h"

namespace cxiosync {
namespace {

class CgroupFsIoMax : public IoMaxAccess {
 public:
  explicit CgroupFsIoMax(const CgroupFs& fs) : fs_(fs) {}

  Result<Current> read(const CgroupPath& cgroup, const DevNum& dev,
                       uint64_t expectedInode) override {
    auto dir = expectedInode ? fs_.openDirExpecting(cgroup, expectedInode) : fs_.openDir(cgroup);
    if (!dir) return dir.error();
    auto line = fs_.readIoMaxFor(dir.value(), dev);
    if (!line) return line.error();
    return Current{dir->inode(), line.value()};
  }

  Result<std::optional<IoMaxEntry>> write(const CgroupPath& cgroup, uint64_t expectedInode,
                                          const IoMaxEntry& entry) override {
    auto dir = expectedInode ? fs_.openDirExpecting(cgroup, expectedInode) : fs_.openDir(cgroup);
    if (!dir) return dir.error();
    return fs_.writeIoMax(dir.value(), entry);
  }

 private:
  const CgroupFs& fs_;
};

}  // namespace

std::unique_ptr<IoMaxAccess> makeCgroupFsIoMax(const CgroupFs& fs) {
  return std::make_unique<CgroupFsIoMax>(fs);
}

}  // namespace cxiosync
