// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/loop/loop_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "policy/json.h"

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
  Json loops = Json::array();
  for (const auto& r : records) {
    const LoopOptions& o = r.options;
    loops.push_back({{"device", "loop" + std::to_string(r.index)},
                     {"index", r.index},
                     {"uid", r.uid},
                     {"created", r.createdUnix},
                     {"backing_dev", r.backingFsDevice.str()},
                     {"backing_inode", r.backingInode},
                     {"backing_file", jsonBytes(r.backingFile)},
                     {"backend", r.backend},
                     {"options",
                      {{"read_only", o.readOnly},
                       {"offset", o.offset},
                       {"size_limit", o.sizeLimit},
                       {"autoclear", o.autoclear},
                       {"partscan", o.partscan},
                       {"block_size", o.blockSize},
                       {"direct_io", directIoModeName(o.directIo)},
                       {"queue_depth", o.queueDepth}}},
                     {"block_size_chosen", r.blockSizeChosen},
                     {"block_size_source", blockSizeSourceName(r.blockSizeSource)},
                     {"direct_io_note", jsonBytes(r.directIoNote)}});
    // Only when known: a file written on a kernel without diskseq reads as it always did.
    if (r.diskseq) loops.back()["diskseq"] = r.diskseq;
  }
  return jsonDump(Json{{"version", 1}, {"loops", std::move(loops)}}, 2) + "\n";
}

namespace {

Result<LoopRecord> loopRecordFromJson(const Json& n) {
  LoopRecord r;
  std::string dev, source, directIo;
  JsonFields f(n);
  f.require("index").require("uid").require("backing_dev").require("backing_inode");
  f.num("index", r.index).num("uid", r.uid).num("created", r.createdUnix);
  f.text("backing_dev", dev).num("backing_inode", r.backingInode).num("diskseq", r.diskseq);
  f.bytes("backing_file", r.backingFile).text("backend", r.backend);
  f.num("block_size_chosen", r.blockSizeChosen).text("block_size_source", source);
  f.bytes("direct_io_note", r.directIoNote);
  if (const Json* o = jsonMember(n, "options"); o && f.ok()) {
    JsonFields of(*o);
    of.flag("read_only", r.options.readOnly).num("offset", r.options.offset);
    of.num("size_limit", r.options.sizeLimit).flag("autoclear", r.options.autoclear);
    of.flag("partscan", r.options.partscan).num("block_size", r.options.blockSize);
    of.num("queue_depth", r.options.queueDepth).text("direct_io", directIo);
    if (!of.ok()) return makeError("options: " + of.error(), EINVAL);
  }
  if (!f.ok()) return makeError(f.error(), EINVAL);
  if (r.index < 0) return makeError("negative index", EINVAL);
  auto dn = parseDevNum(dev);
  if (!dn) return makeError("backing_dev: " + dn.error().message, EINVAL);
  r.backingFsDevice = *dn;
  if (!directIo.empty()) {
    auto m = parseDirectIoMode(directIo);
    if (!m) return makeError(m.error().message, EINVAL);
    r.options.directIo = *m;
  }
  if (!source.empty()) r.blockSizeSource = parseBlockSizeSource(source);
  return r;
}

}  // namespace

Result<std::vector<LoopRecord>> loopRecordsFromJson(const std::string& text,
                                                    std::vector<std::string>* skipped) {
  auto root = jsonParse(text);
  if (!root) return makeError("loop state: " + root.error().message, EINVAL);
  if (!root->is_object()) return makeError("loop state: not a JSON object", EINVAL);
  std::vector<LoopRecord> out;
  const Json* loops = jsonMember(*root, "loops");
  if (!loops) return out;
  if (!loops->is_array()) return makeError("loop state: \"loops\" is not an array", EINVAL);
  for (size_t i = 0; i < loops->size(); ++i) {
    auto r = loopRecordFromJson((*loops)[i]);
    if (r)
      out.push_back(std::move(r.value()));
    else if (skipped)
      skipped->push_back("loops[" + std::to_string(i) + "]: " + r.error().message);
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
  skipped_.clear();
  auto r = loopRecordsFromJson(*text, &skipped_);
  if (!r) return makeError(p + ": " + r.error().message, r.error().code);
  for (auto& why : skipped_) why = p + ": " + why + ": skipped";
  // The next save drops what could not be read: keep the file as it was for a person.
  if (!skipped_.empty()) (void)writeFileAtomically(p + ".bad", *text, 0600);
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
    if (r.diskseq != 0 && k.diskseq && *k.diskseq != r.diskseq) {
      res.dropped.push_back({std::move(r), name +
                                               " was attached again since cxiosync set it up "
                                               "(diskseq " +
                                               std::to_string(*k.diskseq) + ", recorded " +
                                               std::to_string(r.diskseq) + "): not ours"});
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
