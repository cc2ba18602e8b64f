// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// Helpers shared by the daemon unit tests: a temp dir and a fake io.max that behaves like
// the kernel's (merging written keys into the device line; all-max lines disappear).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "daemon/act/boost_executor.h"

namespace cxiosync::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cxiosync-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

inline CgroupPath cg(const char* p) {
  return CgroupPath::parse(p).value();
}
inline DevNum dev(uint32_t ma, uint32_t mi) {
  return DevNum{ma, mi};
}

// Kernel-like io.max for a set of cgroups.
class FakeIoMax : public IoMaxAccess {
 public:
  struct Cg {
    uint64_t inode = 0;
    std::map<DevNum, IoLimits> lines;  // full four keys
  };
  std::map<CgroupPath, Cg> cgroups;
  int writes = 0;
  int failWritesWith = 0;             // errno to fail writes with (0 = succeed)
  std::function<void()> beforeWrite;  // runs at the start of every write

  void add(const CgroupPath& p, uint64_t inode) { cgroups[p].inode = inode; }
  void set(const CgroupPath& p, DevNum d, IoLimits l) {
    cgroups[p].lines[d] =
        overlayLimits(IoLimits{kUnlimited, kUnlimited, kUnlimited, kUnlimited}, l);
  }
  IoLimits get(const CgroupPath& p, DevNum d) {
    auto& c = cgroups.at(p);
    auto it = c.lines.find(d);
    return it == c.lines.end() ? IoLimits{kUnlimited, kUnlimited, kUnlimited, kUnlimited}
                               : it->second;
  }

  Result<Current> read(const CgroupPath& p, const DevNum& d, uint64_t expectedInode) override {
    auto it = cgroups.find(p);
    if (it == cgroups.end()) return makeError("no such cgroup", ENOENT);
    if (expectedInode && it->second.inode != expectedInode) return makeError("recreated", ESTALE);
    Current c;
    c.inode = it->second.inode;
    auto l = it->second.lines.find(d);
    if (l != it->second.lines.end()) c.line = IoMaxEntry{d, l->second};
    return c;
  }
  Result<std::optional<IoMaxEntry>> write(const CgroupPath& p, uint64_t expectedInode,
                                          const IoMaxEntry& e) override {
    if (beforeWrite) beforeWrite();
    if (failWritesWith) return makeError("injected failure", failWritesWith);
    auto it = cgroups.find(p);
    if (it == cgroups.end()) return makeError("no such cgroup", ENOENT);
    if (expectedInode && it->second.inode != expectedInode) return makeError("recreated", ESTALE);
    ++writes;
    IoLimits full = get(p, e.dev);
    full = overlayLimits(full, e.limits);
    if (full == IoLimits{kUnlimited, kUnlimited, kUnlimited, kUnlimited})
      it->second.lines.erase(e.dev);
    else
      it->second.lines[e.dev] = full;
    auto cur = read(p, e.dev, 0);
    return cur->line;
  }
};

}  // namespace cxiosync::testing
