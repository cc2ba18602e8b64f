#include "daemon/blockdev/loop/loop_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "policy/json_writer.h"

namespace cxiosync {

namespace {

BlockSizeSource parseBlockSizeSource(const std::string& s) {
  for (auto v : {BlockSizeSource::Caller, BlockSizeSource::DioAlign, BlockSizeSource::BackingBdev,
                 BlockSizeSource::Probe, BlockSizeSource::Default}) {
    if (s == blockSizeSourceName(v)) return v;
  }
  return BlockSizeSource::Default;
}

std::string stripDeleted(std::string s) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (s.size() >= kDeleted.size() &&
      s.compare(s.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0)
    s.resize(s.size() - kDeleted.size());
  return s;
}

}  // namespace

std::string loopRecordsToJson(const std::vector<LoopRecord>& records) {
  JsonWriter w;
  w.beginObject().key("version").value(1).key("loops").beginArray();
  for (const auto& r : records) {
    w.beginObject();
    w.key("device").value("loop" + std::to_string(r.index));
    w.key("index").value(r.index);
    w.key("uid").value(r.uid);
    w.key("created").value(r.createdUnix);
    w.key("backing_dev").value(r.backingFsDevice.str());
    w.key("backing_inode").value(r.backingInode);
    w.key("backing_file").value(r.backingFile);
    w.key("backend").value(r.backend);
    w.key("options").beginObject();
    w.key("read_only").value(r.options.readOnly);
    w.key("offset").value(r.options.offset);
    w.key("size_limit").value(r.options.sizeLimit);
    w.key("autoclear").value(r.options.autoclear);
    w.key("partscan").value(r.options.partscan);
    w.key("block_size").value(r.options.blockSize);
    w.key("direct_io").value(directIoModeName(r.options.directIo));
    w.key("queue_depth").value(r.options.queueDepth);
    w.endObject();
    w.key("block_size_chosen").value(r.blockSizeChosen);
    w.key("block_size_source").value(blockSizeSourceName(r.blockSizeSource));
    w.key("direct_io_note").value(r.directIoNote);
    w.endObject();
  }
  w.endArray().endObject();
  return w.str() + "\n";
}

Result<std::vector<LoopRecord>> loopRecordsFromJson(const std::string& text) {
  std::vector<LoopRecord> out;
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return makeError("loop state: not a JSON object", EINVAL);
    if (root["version"] && root["version"].as<int>() != 1)
      return makeError("loop state: unsupported version " + root["version"].as<std::string>(),
                       EINVAL);
    YAML::Node loops = root["loops"];
    if (!loops) return out;
    if (!loops.IsSequence()) return makeError("loop state: \"loops\" is not an array", EINVAL);
    for (const auto& n : loops) {
      LoopRecord r;
      r.index = n["index"].as<int>();
      if (r.index < 0) return makeError("loop state: negative index", EINVAL);
      r.uid = n["uid"].as<uint32_t>();
      if (n["created"]) r.createdUnix = n["created"].as<int64_t>();
      auto dev = parseDevNum(n["backing_dev"].as<std::string>());
      if (!dev) return makeError("loop state: backing_dev: " + dev.error().message, EINVAL);
      r.backingFsDevice = *dev;
      r.backingInode = n["backing_inode"].as<uint64_t>();
      if (n["backing_file"]) r.backingFile = n["backing_file"].as<std::string>();
      if (n["backend"]) r.backend = n["backend"].as<std::string>();
      if (YAML::Node o = n["options"]) {
        if (o["read_only"]) r.options.readOnly = o["read_only"].as<bool>();
        if (o["offset"]) r.options.offset = o["offset"].as<uint64_t>();
        if (o["size_limit"]) r.options.sizeLimit = o["size_limit"].as<uint64_t>();
        if (o["autoclear"]) r.options.autoclear = o["autoclear"].as<bool>();
        if (o["partscan"]) r.options.partscan = o["partscan"].as<bool>();
        if (o["block_size"]) r.options.blockSize = o["block_size"].as<uint32_t>();
        if (o["queue_depth"]) r.options.queueDepth = o["queue_depth"].as<uint32_t>();
        if (o["direct_io"]) {
          auto m = parseDirectIoMode(o["direct_io"].as<std::string>());
          if (!m) return makeError("loop state: " + m.error().message, EINVAL);
          r.options.directIo = *m;
        }
      }
      if (n["block_size_chosen"]) r.blockSizeChosen = n["block_size_chosen"].as<uint32_t>();
      if (n["block_size_source"])
        r.blockSizeSource = parseBlockSizeSource(n["block_size_source"].as<std::string>());
      if (n["direct_io_note"]) r.directIoNote = n["direct_io_note"].as<std::string>();
      out.push_back(std::move(r));
    }
  } catch (const YAML::Exception& e) {
    return makeError(std::string("loop state: ") + e.what(), EINVAL);
  }
  return out;
}

Result<UniqueFd> LoopStateStore::lock() const {
  if (::mkdir(runDir_.c_str(), 0755) != 0 && errno != EEXIST)
    return sysError(errno, "mkdir", runDir_);
  const std::string p = runDir_ + "/" + kLoopLockFile;
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return sysError(errno, "open", p);
  UniqueFd f(fd);
  while (::flock(f.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return sysError(errno, "flock", p);
  }
  return f;
}

Result<std::vector<LoopRecord>> LoopStateStore::load() const {
  const std::string p = path();
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::vector<LoopRecord>{};
    return sysError(errno, "open", p);
  }
  UniqueFd f(fd);
  auto text = readAll(f.get(), p);
  if (!text) return text.error();
  if (text->empty()) return std::vector<LoopRecord>{};
  auto r = loopRecordsFromJson(*text);
  if (!r) return makeError(p + ": " + r.error().message, r.error().code);
  return r;
}

Status LoopStateStore::save(const std::vector<LoopRecord>& records) const {
  if (::mkdir(runDir_.c_str(), 0755) != 0 && errno != EEXIST)
    return sysError(errno, "mkdir", runDir_);
  const std::string p = path();
  const std::string tmp = p + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return sysError(errno, "open", tmp);
  UniqueFd f(fd);
  const std::string data = loopRecordsToJson(records);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(f.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::unlink(tmp.c_str());
      return sysError(e, "write", tmp);
    }
    done += static_cast<size_t>(n);
  }
  f.reset();
  if (::rename(tmp.c_str(), p.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return sysError(e, "rename", p);
  }
  return Ok{};
}

void LoopStateStore::quarantine() const {
  const std::string p = path();
  ::rename(p.c_str(), (p + ".bad").c_str());
}

ReconcileResult reconcileLoopRecords(std::vector<LoopRecord> records,
                                     const std::map<int, LoopKernelState>& kernel) {
  ReconcileResult res;
  // Newest first, so the first record seen for an index wins.
  std::stable_sort(records.begin(), records.end(), [](const LoopRecord& a, const LoopRecord& b) {
    return a.createdUnix > b.createdUnix;
  });
  std::map<int, bool> seen;
  for (auto& r : records) {
    const std::string name = "loop" + std::to_string(r.index);
    if (seen[r.index]) {
      res.dropped.push_back({std::move(r), name + ": older duplicate record"});
      continue;
    }
    seen[r.index] = true;
    auto it = kernel.find(r.index);
    if (it == kernel.end()) {
      res.dropped.push_back({std::move(r), name + " no longer exists"});
      continue;
    }
    const LoopKernelState& k = it->second;
    if (!k.bound) {
      res.dropped.push_back({std::move(r), name + " was detached"});
      continue;
    }
    if (k.backingFsDevice && k.backingInode) {
      if (*k.backingFsDevice != r.backingFsDevice || *k.backingInode != r.backingInode) {
        res.dropped.push_back({std::move(r), name + " is now backed by another file (" +
                                                 k.backingFsDevice->str() + " inode " +
                                                 std::to_string(*k.backingInode) + "): not ours"});
        continue;
      }
    } else if (stripDeleted(k.backingFile) != stripDeleted(r.backingFile)) {
      res.dropped.push_back(
          {std::move(r), name + " is now backed by " + k.backingFile + ": not ours"});
      continue;
    }
    res.kept.push_back(std::move(r));
  }
  std::sort(res.kept.begin(), res.kept.end(),
            [](const LoopRecord& a, const LoopRecord& b) { return a.index < b.index; });
  return res;
}

}  // namespace cxiosync
