// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/nbd/nbd_manager.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>
#include <utility>

#include "daemon/kernel/fs.h"
#include "policy/json.h"

namespace cxiosync {

namespace {
constexpr const char* kStateFile = "nbd.json";
constexpr const char* kLockFile = "nbd.lock";

bool ensureNbdModule(const std::string& sysRoot) {
  if (::access((sysRoot + "/module/nbd").c_str(), F_OK) == 0) return true;
  pid_t p = ::fork();
  if (p == 0) {
    int nul = ::open("/dev/null", O_RDWR);
    ::dup2(nul, 1);
    ::dup2(nul, 2);
    ::execl("/sbin/modprobe", "modprobe", "nbd", static_cast<char*>(nullptr));
    ::execlp("modprobe", "modprobe", "nbd", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (p < 0) return false;
  int st = 0;
  while (::waitpid(p, &st, 0) < 0 && errno == EINTR) {
  }
  for (int i = 0; i < 100; ++i) {
    if (::access((sysRoot + "/block/nbd0").c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ::access((sysRoot + "/module/nbd").c_str(), F_OK) == 0;
}
}  // namespace

std::string nbdRecordsToJson(const std::vector<NbdRecord>& recs) {
  Json list = Json::array();
  for (const auto& r : recs) {
    list.push_back({{"device", "nbd" + std::to_string(r.index)},
                    {"index", r.index},
                    {"uid", r.uid},
                    {"created", r.createdUnix},
                    {"server_pid", static_cast<int64_t>(r.pid)},
                    {"workers", r.workers},
                    {"backing_dev", r.backingDev},
                    {"backing_inode", r.backingInode},
                    {"backing_file", jsonBytes(r.backingFile)},
                    {"read_only", r.readOnly},
                    {"direct_io", r.directIo},
                    {"block_size", r.blockSize},
                    {"timeout", r.timeoutSec}});
    if (!r.serverCgroup.empty()) list.back()["server_cgroup"] = jsonBytes(r.serverCgroup);
    if (!r.serverCgroupMode.empty()) list.back()["server_cgroup_mode"] = r.serverCgroupMode;
  }
  return jsonDump(Json{{"version", 1}, {"nbd", std::move(list)}}, 2) + "\n";
}

namespace {

Result<NbdRecord> nbdRecordFromJson(const Json& n) {
  NbdRecord r;
  int64_t pid = 0;
  JsonFields f(n);
  f.require("index").require("uid").require("server_pid");
  f.num("index", r.index).num("uid", r.uid).num("server_pid", pid).num("created", r.createdUnix);
  f.num("workers", r.workers).text("backing_dev", r.backingDev);
  f.num("backing_inode", r.backingInode).bytes("backing_file", r.backingFile);
  f.flag("read_only", r.readOnly).flag("direct_io", r.directIo);
  f.num("block_size", r.blockSize).num("timeout", r.timeoutSec);
  f.bytes("server_cgroup", r.serverCgroup).text("server_cgroup_mode", r.serverCgroupMode);
  if (!f.ok()) return makeError(f.error(), EINVAL);
  if (r.index < 0 || pid <= 0 || !std::in_range<pid_t>(pid))
    return makeError("bad index or pid", EINVAL);
  r.pid = static_cast<pid_t>(pid);
  return r;
}

}  // namespace

Result<std::vector<NbdRecord>> nbdRecordsFromJson(const std::string& text,
                                                  std::vector<std::string>* skipped) {
  auto root = jsonParse(text);
  if (!root) return makeError("nbd state: " + root.error().message, EINVAL);
  if (!root->is_object()) return makeError("nbd state: not a JSON object", EINVAL);
  std::vector<NbdRecord> out;
  const Json* l = jsonMember(*root, "nbd");
  if (!l) return out;
  if (!l->is_array()) return makeError("nbd state: \"nbd\" is not an array", EINVAL);
  for (size_t i = 0; i < l->size(); ++i) {
    auto r = nbdRecordFromJson((*l)[i]);
    if (r)
      out.push_back(std::move(r.value()));
    else if (skipped)
      skipped->push_back("nbd[" + std::to_string(i) + "]: " + r.error().message);
  }
  return out;
}

Result<int> parseNbdName(std::string_view t) {
  if (t.rfind("/dev/", 0) == 0) t.remove_prefix(5);
  if (t.rfind("nbd", 0) != 0)
    return makeError("not an nbd device: \"" + std::string(t) + "\"", EINVAL);
  int64_t n = parseDecimalName(t.substr(3));
  if (n < 0 || n >= (1 << 20))
    return makeError("not an nbd device: \"" + std::string(t) + "\"", EINVAL);
  return static_cast<int>(n);
}

NbdManager::NbdManager(NbdManagerOptions o) : o_(std::move(o)) {}

Result<UniqueFd> NbdManager::lock() {
  if (::mkdir(o_.runDir.c_str(), 0755) != 0 && errno != EEXIST)
    return sysError(errno, "mkdir", o_.runDir);
  const std::string p = o_.runDir + "/" + kLockFile;
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return sysError(errno, "open", p);
  UniqueFd f(fd);
  while (::flock(f.get(), LOCK_EX) != 0)
    if (errno != EINTR) return sysError(errno, "flock", p);
  return f;
}

Result<std::vector<NbdRecord>> NbdManager::load() {
  const std::string p = o_.runDir + "/" + kStateFile;
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::vector<NbdRecord>{};
    return sysError(errno, "open", p);
  }
  UniqueFd f(fd);
  auto t = readAll(f.get(), p);
  if (!t) return t.error();
  if (t->empty()) return std::vector<NbdRecord>{};
  std::vector<std::string> skipped;
  auto r = nbdRecordsFromJson(*t, &skipped);
  if (!r) {
    ::rename(p.c_str(), (p + ".bad").c_str());
    return std::vector<NbdRecord>{};
  }
  // A record left out makes its device foreign (never touched on a user's behalf); the next
  // save drops it, so keep the file as it was for a person.
  if (!skipped.empty()) (void)writeFileAtomically(p + ".bad", *t, 0600);
  return r;
}

Status NbdManager::save(const std::vector<NbdRecord>& recs) {
  const std::string p = o_.runDir + "/" + kStateFile, tmp = p + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return sysError(errno, "open", tmp);
  UniqueFd f(fd);
  const std::string d = nbdRecordsToJson(recs);
  if (::write(f.get(), d.data(), d.size()) != static_cast<ssize_t>(d.size())) {
    int e = errno;
    ::unlink(tmp.c_str());
    return sysError(e, "write", tmp);
  }
  f.reset();
  if (::rename(tmp.c_str(), p.c_str()) != 0) return sysError(errno, "rename", p);
  return Ok{};
}

BlockDeviceInfo NbdManager::info(const nbd::DeviceState& s, const std::optional<NbdRecord>& rec) {
  BlockDeviceInfo d;
  d.name = "nbd" + std::to_string(s.index);
  d.device = o_.devRoot + "/" + d.name;
  d.backend = BackendKind::Nbd;
  d.sizeBytes = s.sizeBytes;
  d.readOnly = s.readOnly;
  d.queueDepth = s.requestDepth;
  d.blockSize = s.logicalBlockSize;
  d.workersSettable = false;
  if (rec) {
    d.foreign = false;
    d.setupByUid = rec->uid;
    d.backingFile = rec->backingFile;
    d.workers = rec->workers;
    d.inFlightMax = rec->workers;
    d.directIo = rec->directIo;
    d.serverPid = rec->pid;
    d.serverAlive = nbd::serverAlive(rec->pid);
    d.serverCgroupMode = rec->serverCgroupMode;
    d.serverCgroup = rec->serverCgroup;
    // Live: the tenant may have moved it inside its own (delegated) subtree.
    if (d.serverAlive)
      if (auto now = nbd::processCgroupPath(rec->pid, o_.procRoot); !now.empty())
        d.serverCgroup = now;
    if (!d.serverAlive && s.connected)
      d.note = "server process " + std::to_string(rec->pid) +
               " is gone but the kernel still shows the device: I/O fails after the timeout";
    else if (!d.serverAlive)
      d.note = "server process " + std::to_string(rec->pid) +
               " died: the device is disconnected (I/O fails); detach to clear the record";
    else if (!s.connected)
      d.note = "server running but the device is not connected";
  } else {
    d.foreign = true;
    d.workers = s.connections;
    d.inFlightMax = s.connections;
    d.serverPid = s.kernelPid;
    d.note = "set up by another program (nbd-client, qemu-nbd?)";
  }
  return d;
}

Result<BlockDeviceInfo> NbdManager::setup(int backingFd, const NbdOptions& opt,
                                          uint32_t callerUid) {
  if (auto v = validateWorkers(opt.workers); !v) return v.error();
  struct stat st {};
  if (::fstat(backingFd, &st) != 0) return sysError(errno, "fstat", "backing fd");
  if (!ensureNbdModule(o_.sysRoot))
    return makeError("the nbd module is not available (modprobe nbd failed)", ENOTSUP);
  nbd::SpawnOptions so;
  so.serverPath = o_.serverPath;
  so.backingFd = backingFd;
  so.workers = opt.workers;
  so.readOnly = opt.readOnly;
  so.blockSize = opt.blockSize;
  so.timeoutSec = opt.timeoutSec;
  so.directIo = opt.directIo != DirectIoMode::Off;
  so.sysRoot = o_.sysRoot;
  so.devRoot = o_.devRoot;
  if (::mkdir(o_.runDir.c_str(), 0755) == 0 || errno == EEXIST)
    so.logPath = o_.runDir + "/nbd-server.log";
  const nbd::ServerCgroup where = nbd::effectiveServerCgroup(opt.serverCgroup, callerUid);
  std::optional<nbd::TargetCgroup> target;
  if (where == nbd::ServerCgroup::Caller) {
    auto t = nbd::openProcessCgroup(opt.callerPid, callerUid, o_.procRoot, o_.cgroupRoot);
    if (!t)
      return makeError("server_cgroup=caller: " + t.error().message +
                           " (the nbd server must run in the caller's cgroup so that its I/O is "
                           "charged there; server_cgroup=daemon is for root)",
                       t.error().code);
    if (auto f = nbd::refuseFrozen(*t); !f) return f.error();
    target = std::move(*t);
    so.cgroupFd = target->dir.get();
    so.cgroupPath = target->path;
  }
  auto lk = lock();  // serialises device choice between our own callers
  if (!lk) return lk.error();
  auto sp = nbd::spawnServer(so);
  if (!sp) return sp.error();
  NbdRecord r;
  r.index = sp->index;
  r.uid = callerUid;
  r.createdUnix = static_cast<int64_t>(::time(nullptr));
  r.pid = sp->pid;
  r.workers = opt.workers;
  r.backingDev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  r.backingInode = st.st_ino;
  char buf[4096];
  ssize_t n =
      ::readlink(("/proc/self/fd/" + std::to_string(backingFd)).c_str(), buf, sizeof buf - 1);
  if (n > 0) r.backingFile.assign(buf, static_cast<size_t>(n));
  r.readOnly = opt.readOnly;
  r.directIo = sp->directIo;
  r.blockSize = sp->blockSize;
  r.timeoutSec = opt.timeoutSec;
  r.serverCgroupMode = nbd::serverCgroupName(where);
  r.serverCgroup = nbd::processCgroupPath(sp->pid, o_.procRoot);
  auto stop = [&] {
    (void)nbd::stopServer(o_.devRoot, o_.sysRoot, sp->index, sp->pid, o_.stopWait);
  };
  // Read back, not assumed: the kernel put the server where clone3/cgroup.procs said.
  if (target && r.serverCgroup != target->path) {
    stop();
    return makeError("the nbd server runs in cgroup \"" + r.serverCgroup +
                         "\", not in the caller's " + target->path,
                     EIO);
  }
  if (opt.directIo == DirectIoMode::On && !sp->directIo) {
    stop();
    return makeError("direct I/O is not possible on the backing file (O_DIRECT refused)", EINVAL);
  }
  auto recs = load();
  if (!recs) {
    stop();
    return recs.error();
  }
  std::erase_if(*recs, [&](const NbdRecord& x) { return x.index == r.index; });
  recs->push_back(r);
  std::sort(recs->begin(), recs->end(),
            [](const NbdRecord& a, const NbdRecord& b) { return a.index < b.index; });
  if (auto s = save(*recs); !s) {
    stop();
    return s.error();
  }
  auto ds = nbd::readDevice(o_.sysRoot, r.index);
  if (!ds) return ds.error();
  auto d = info(*ds, r);
  d.readOnly = ds->readOnly;
  return d;
}

Result<std::vector<BlockDeviceInfo>> NbdManager::list(bool includeForeign) {
  std::vector<BlockDeviceInfo> out;
  auto recs = load();
  if (!recs) return recs.error();
  auto idx = nbd::listDevices(o_.sysRoot);
  if (!idx) return out;  // no nbd module: no nbd devices
  for (int i : *idx) {
    auto s = nbd::readDevice(o_.sysRoot, i);
    if (!s) continue;
    std::optional<NbdRecord> rec;
    for (const auto& r : *recs)
      if (r.index == i) rec = r;
    if (!rec && !s->connected) continue;
    if (!rec && !includeForeign) continue;
    out.push_back(info(*s, rec));
  }
  return out;
}

Result<BlockDeviceInfo> NbdManager::show(std::string_view dev) {
  auto i = parseNbdName(dev);
  if (!i) return i.error();
  auto s = nbd::readDevice(o_.sysRoot, *i);
  if (!s) return s.error();
  auto recs = load();
  if (!recs) return recs.error();
  std::optional<NbdRecord> rec;
  for (const auto& r : *recs)
    if (r.index == *i) rec = r;
  if (!rec && !s->connected)
    return makeError("nbd" + std::to_string(*i) + " is not connected", ENOENT);
  return info(*s, rec);
}

Result<BlockDeviceInfo> NbdManager::setWorkers(std::string_view dev, int workers, uint32_t) {
  if (auto v = validateWorkers(workers); !v) return v.error();
  auto d = show(dev);
  if (!d) return d.error();
  return makeError(d->name + ": the nbd backend cannot change its worker count at runtime (the " +
                       "kernel fixes the connections when the device starts); detach and set " +
                       "it up again with --workers " + std::to_string(workers),
                   ENOTSUP);
}

Result<NbdManager::DetachResult> NbdManager::detach(std::string_view dev, uint32_t uid,
                                                    bool force) {
  auto d = show(dev);
  if (!d) return d.error();
  if (d->foreign && !(uid == 0 && force))
    return makeError(d->name + " was not set up by cxiosync; only root with force may detach it",
                     EPERM);
  // Another uid's device: as in LoopManager, the caller authorizes (the bus layer asks polkit
  // org.cxiosync1.loop-delete-others); refusing it here made that authorization useless.
  DetachResult r;
  r.name = d->name;
  auto idx = parseNbdName(dev);
  auto st = nbd::stopServer(o_.devRoot, o_.sysRoot, *idx, d->serverPid, o_.stopWait);
  r.detached = st.disconnected && (d->foreign || st.serverExited);
  r.note = st.note;
  if (r.detached && !d->foreign) {
    auto lk = lock();
    if (!lk) return lk.error();
    auto recs = load();
    if (!recs) return recs.error();
    std::erase_if(*recs, [&](const NbdRecord& x) { return x.index == *idx; });
    if (auto s = save(*recs); !s) return s.error();
  }
  return r;
}

}  // namespace cxiosync
