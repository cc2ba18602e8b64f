// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// A directory tree in a fresh temp dir for adapter tests (cgroupfs, procfs, sysfs,
// tracefs fakes). Removed on destruction.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace cxiosync::testing {

class FakeTree {
 public:
  FakeTree() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cxiosync-sense-XXXXXX").string();
    char* d = ::mkdtemp(tmpl.data());
    if (!d) std::abort();
    root_ = d;
  }
  ~FakeTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  const std::string& root() const { return root_; }
  std::string path(const std::string& rel) const { return rel.empty() ? root_ : root_ + "/" + rel; }

  void dir(const std::string& rel) const { std::filesystem::create_directories(path(rel)); }
  void file(const std::string& rel, const std::string& content) const {
    auto p = std::filesystem::path(path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
  }
  std::string read(const std::string& rel) const {
    std::ifstream in(path(rel), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void symlink(const std::string& target, const std::string& rel) const {
    auto p = std::filesystem::path(path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::create_symlink(target, p);
  }
  void remove(const std::string& rel) const { std::filesystem::remove_all(path(rel)); }
  bool exists(const std::string& rel) const { return std::filesystem::exists(path(rel)); }
  uint64_t inode(const std::string& rel) const {
    struct stat st {};
    ::lstat(path(rel).c_str(), &st);
    return st.st_ino;
  }

 private:
  std::string root_;
};

// A /proc/PID/stat line with the fields cxiosync reads (state, starttime = field 22).
inline std::string procStatLine(int64_t tid, const std::string& comm, char state,
                                uint64_t startTime) {
  std::string s = std::to_string(tid) + " (" + comm + ") " + state + " 1 " + std::to_string(tid) +
                  " " + std::to_string(tid) + " 0 -1 4194560";
  // fields 10..21
  for (int f = 10; f <= 21; ++f) s += " 0";
  s += " " + std::to_string(startTime);
  for (int f = 23; f <= 52; ++f) s += " 0";
  return s + "\n";
}

// "/proc/TID/syscall" inside a syscall with arg0.
inline std::string procSyscallLine(int64_t nr, uint64_t arg0 = 0, uint64_t arg2 = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld 0x%llx 0x0 0x%llx 0x0 0x0 0x0 0x7ffd0000 0x7f000000\n",
                static_cast<long long>(nr), static_cast<unsigned long long>(arg0),
                static_cast<unsigned long long>(arg2));
  return buf;
}

// Adds a thread to a fake /proc: both /proc/PID/task/TID/... and /proc/TID/... (the
// kernel resolves any tid at the top level too).
inline void addThread(const FakeTree& proc, int64_t pid, int64_t tid, const std::string& comm,
                      char state, const std::string& syscall, const std::string& cgroup,
                      uint64_t startTime = 1000) {
  for (const std::string& base :
       {std::to_string(pid) + "/task/" + std::to_string(tid), std::to_string(tid)}) {
    proc.file(base + "/stat", procStatLine(tid, comm, state, startTime));
    proc.file(base + "/syscall", syscall);
    proc.file(base + "/cgroup", "0::" + cgroup + "\n");
    proc.file(base + "/status", "Name:\t" + comm + "\nTgid:\t" + std::to_string(pid) + "\nPid:\t" +
                                    std::to_string(tid) + "\n");
  }
}

}  // namespace cxiosync::testing
