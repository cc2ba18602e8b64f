// SPDX-License-Identifier: GPL-2.0-or-later
#include "dbus/loop_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>

#include <cerrno>

#include "cxiosync1_adaptor.h"  // generated from org.cxiosync1.xml
#include "dbus/bus_server.h"
#include "dbus/loop_props.h"
#include "dbus/reply.h"
#include "dbus/sdbus_compat.h"

namespace cxiosync::dbus {

namespace {

constexpr auto kStale = std::chrono::seconds(1);

// Every error name comes from dbus/errors.cpp.
sdbus::Error loopError(LoopErrorKind kind, const std::string& message) {
  return compat::error(loopErrorKindName(kind), message);
}

sdbus::Error notSupportedError() {
  return loopError(LoopErrorKind::NotSupported,
                   "Loop devices are not available in this daemon (no /dev/loop-control, or "
                   "the loop manager failed to start; see the daemon's log)");
}

// Replies leave through reply.h (escaped messages; Error.Failed for one that cannot be built).
template <class R>
void replyError(const std::shared_ptr<R>& result, const sdbus::Error& e) {
  reply::error(*result, "org.cxiosync1.Loop", e, {});
}

// The fds this process has open; SIZE_MAX when /proc cannot tell.
size_t openFdCount() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return SIZE_MAX;
  size_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n > 0 ? n - 1 : 0;  // not the directory's own fd
}

// Whether a new LoopSetup may pin more fds: below half the soft RLIMIT_NOFILE (the rest is
// for io.max, the journal, the detector and the bus). Past it, io.max opens would fail and
// boosts could not be restored (audit M4).
bool fdHeadroom(size_t* open, size_t* limit) {
  struct rlimit rl {};
  *limit = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
               ? static_cast<size_t>(rl.rlim_cur)
               : 1024;
  *open = openFdCount();
  return *open != SIZE_MAX && *open < *limit / 2;
}

std::string describeSetup(const LoopSetupOptions& o) {
  std::string s = std::string("direct_io=") + directIoModeName(o.directIo);
  if (o.readOnly) s += " read_only";
  if (o.offset) s += " offset=" + std::to_string(o.offset);
  if (o.sizeLimit) s += " size_limit=" + std::to_string(o.sizeLimit);
  if (o.blockSize) s += " block_size=" + std::to_string(o.blockSize);
  if (o.autoclear) s += " autoclear";
  if (o.partscan) s += " partscan";
  if (o.backend != BackendKind::Auto) s += std::string(" backend=") + backendKindName(o.backend);
  if (o.workers) s += " workers=" + std::to_string(o.workers);
  if (o.queueDepth) s += " queue_depth=" + std::to_string(o.queueDepth);
  if (o.nbdTimeoutSec) s += " nbd_timeout=" + std::to_string(o.nbdTimeoutSec);
  if (!o.serverCgroup.empty()) s += " server_cgroup=" + o.serverCgroup;
  return s;
}

// A backend read that never throws (it may run on the worker, where nothing may escape).
Result<LoopInfo> guardedShow(LoopBackend* backend, const std::string& name) {
  try {
    return backend->show(name);
  } catch (const std::exception& e) {
    return makeError("reading " + name + ": internal error: " + e.what(), EIO);
  } catch (...) {
    return makeError("reading " + name + ": internal error", EIO);
  }
}

}  // namespace

template <class T>
void LoopServer::offLoop(std::function<T()> work, std::function<void(T&)> done, FailFn fail) {
  // The value lives in a box both closures share; the queue destroys both on this thread.
  auto box = std::make_shared<std::optional<T>>();
  auto run = [box, work = std::move(work)] {
    try {
      box->emplace(work());
    } catch (...) {
      // An empty box: answered as an internal error below.
    }
  };
  const bool queued = static_cast<bool>(jobs_);
  auto finish = [this, box, done = std::move(done), fail, queued] {
    try {
      if (!*box) {
        fail(loopError(LoopErrorKind::Failed, "loop job: internal error"));
      } else {
        done(**box);
      }
      // A queued job completes outside any object's callback: objects it marked gone (a
      // Detach) go now, not at the next bus message, which would still find them.
      if (queued) collect();
    } catch (const std::exception& e) {
      log(BusLogLevel::Warning, std::string("loop job completion: internal error: ") + e.what());
    } catch (...) {
      log(BusLogLevel::Warning, "loop job completion: internal error");
    }
  };
  if (!jobs_) {
    run();
    finish();
    return;
  }
  bool accepted = false;
  try {
    accepted = jobs_(std::move(run), std::move(finish));
  } catch (...) {
  }
  if (!accepted) {
    log(BusLogLevel::Info, "refused a loop call: too many loop operations pending");
    fail(loopError(LoopErrorKind::Busy,
                   "Not now: too many loop operations are pending (a backing file may not "
                   "answer); try again later"));
  }
}

// ---- one device -------------------------------------------------------------------------

class LoopObject final : public sdbus::AdaptorInterfaces<org::cxiosync1::Loop_adaptor> {
 public:
  LoopObject(sdbus::IConnection& conn, LoopServer& server, const LoopInfo& info)
      : AdaptorInterfaces(conn, sdbus::ObjectPath(wire::loopObjectPath(info.name))),
        server_(server),
        name_(info.name),
        info_(info),
        fetched_(std::chrono::steady_clock::now()) {
    registerAdaptor();
  }
  ~LoopObject() { unregisterAdaptor(); }

  void update(const LoopInfo& info) {
    info_ = info;
    fetched_ = std::chrono::steady_clock::now();
  }
  void refreshLater() {
    if (refreshing_) return;
    refreshing_ = true;
    LoopServer& server = server_;
    LoopBackend* backend = server.backend();
    const std::string name = name_;
    // The completion looks the object up by name: it may be gone by then.
    server.offLoop<Result<LoopInfo>>(
        [backend, name] { return guardedShow(backend, name); },
        [&server, name](Result<LoopInfo>& r) { server.refreshed(name, r); },
        [&server, name](const sdbus::Error&) {
          Result<LoopInfo> none = makeError("busy", EAGAIN);
          server.refreshed(name, none);
        });
  }
  void refreshDone() { refreshing_ = false; }
  void emitAllChanged() {
    try {
      std::vector<std::string> names;
      for (const auto& [k, v] : wire::toWire(info_)) names.push_back(k);
      compat::emitPropertiesChanged(getObject(), wire::kLoopInterface, names);
    } catch (...) {
    }
  }

 private:
  std::string sender() { return compat::currentSender(getObject()); }

  // The cached state, re-read when stale. Throws sdbus::Error (NoSuchDevice when gone).
  const LoopInfo& current() {
    if (std::chrono::steady_clock::now() - fetched_ < kStale) return info_;
    auto* backend = server_.backend();
    if (!backend) throw notSupportedError();
    // A property read may not wait for the kernel (LOOP_GET_STATUS64 asks the backing file's
    // filesystem, which may never answer): the cache answers while a job reads it again.
    if (server_.hasJobs()) {
      refreshLater();
      return info_;
    }
    Result<LoopInfo> fresh = makeError("not read");
    try {
      fresh = backend->show(name_);
    } catch (const std::exception& e) {
      throw loopError(LoopErrorKind::Failed, "reading " + name_ + ": internal error: " + e.what());
    } catch (...) {
      throw loopError(LoopErrorKind::Failed, "reading " + name_ + ": internal error");
    }
    if (!fresh) throw server_.errorOf(fresh.error(), name_);
    update(*fresh);
    return info_;
  }

  template <class T, class F>
  T prop(const char* name, F&& f) {
    try {
      return f(current());
    } catch (const sdbus::Error& e) {
      // A getter's error reply is built by sdbus-c++: its message must be text already.
      throw compat::error(e.getName(), wire::text(e.getMessage()));
    } catch (const std::exception& e) {
      throw loopError(LoopErrorKind::Failed,
                      std::string("Get(") + name + "): internal error: " + e.what());
    } catch (...) {
      throw loopError(LoopErrorKind::Failed, std::string("Get(") + name + "): internal error");
    }
  }

  // A change of the device: options, authorization, apply, reply, PropertiesChanged.
  void change(sdbus::Result<>&& result, const char* method, const wire::Options& options,
              const std::string& what,
              std::function<Result<LoopInfo>(LoopBackend&, uint32_t, bool)> apply) {
    auto shared = std::make_shared<sdbus::Result<>>(std::move(result));
    LoopServer& server = server_;
    const std::string name = name_;
    server.deviceCall(
        name, sender(), method, options, false, what,
        [shared](const sdbus::Error& e) { replyError(shared, e); },
        [shared, &server, name, what, apply](uint32_t uid, bool force) -> std::function<void()> {
          // On the worker: the backend call only.
          auto r = std::make_shared<Result<LoopInfo>>(makeError("not applied"));
          try {
            *r = apply(*server.backend(), uid, force);
          } catch (const std::exception& e) {
            *r = makeError(what + ": internal error: " + e.what(), EIO);
          } catch (...) {
            *r = makeError(what + ": internal error", EIO);
          }
          // On the loop thread: the reply and the objects.
          return [shared, &server, name, what, r, uid, force] {
            if (!*r) {
              replyError(shared, server.errorOf(r->error(), name));
              return;
            }
            server.log(BusLogLevel::Notice,
                       "uid " + std::to_string(uid) + ": " + what + (force ? " (force)" : ""));
            server.updated(name, **r);
            reply::results(*shared, what.c_str(), {});
          };
        });
  }

  void SetDirectIO(sdbus::Result<>&& result, bool enabled, wire::Options options) override {
    change(std::move(result), "SetDirectIO", options,
           std::string(enabled ? "turn direct I/O on for " : "turn direct I/O off for ") + name_,
           [name = name_, enabled](LoopBackend& b, uint32_t uid, bool force) {
             return b.setDirectIO(name, enabled, uid, force);
           });
  }
  void SetBlockSize(sdbus::Result<>&& result, uint32_t size, wire::Options options) override {
    if (size < 512 || size > 65536 || (size & (size - 1)) != 0) {
      auto shared = std::make_shared<sdbus::Result<>>(std::move(result));
      replyError(shared, loopError(LoopErrorKind::InvalidArgument,
                                   "block size " + std::to_string(size) +
                                       " is not a power of two between 512 and 65536"));
      return;
    }
    change(std::move(result), "SetBlockSize", options,
           "set the block size of " + name_ + " to " + std::to_string(size),
           [name = name_, size](LoopBackend& b, uint32_t uid, bool force) {
             return b.setBlockSize(name, size, uid, force);
           });
  }
  void SetCapacity(sdbus::Result<>&& result, wire::Options options) override {
    change(std::move(result), "SetCapacity", options, "refresh the capacity of " + name_,
           [name = name_](LoopBackend& b, uint32_t uid, bool force) {
             return b.setCapacity(name, uid, force);
           });
  }
  void SetAutoclear(sdbus::Result<>&& result, bool enabled, wire::Options options) override {
    change(std::move(result), "SetAutoclear", options,
           std::string(enabled ? "set autoclear on " : "clear autoclear on ") + name_,
           [name = name_, enabled](LoopBackend& b, uint32_t uid, bool force) {
             return b.setAutoclear(name, enabled, uid, force);
           });
  }
  void SetWorkers(sdbus::Result<>&& result, uint32_t workers, wire::Options options) override {
    if (workers < 1 || workers > static_cast<uint32_t>(kMaxLoopWorkers)) {
      auto shared = std::make_shared<sdbus::Result<>>(std::move(result));
      replyError(shared, loopError(LoopErrorKind::InvalidArgument,
                                   "workers " + std::to_string(workers) + " is not between 1 and " +
                                       std::to_string(static_cast<uint32_t>(kMaxLoopWorkers))));
      return;
    }
    change(std::move(result), "SetWorkers", options,
           "set the workers of " + name_ + " to " + std::to_string(workers),
           [name = name_, workers](LoopBackend& b, uint32_t uid, bool force) {
             return b.setWorkers(name, workers, uid, force);
           });
  }
  void SetQueueDepth(sdbus::Result<>&& result, uint32_t depth, wire::Options options) override {
    change(std::move(result), "SetQueueDepth", options,
           "set the queue depth of " + name_ + " to " + std::to_string(depth),
           [name = name_, depth](LoopBackend& b, uint32_t uid, bool force) {
             return b.setQueueDepth(name, depth, uid, force);
           });
  }
  void Detach(sdbus::Result<bool>&& result, wire::Options options) override {
    auto shared = std::make_shared<sdbus::Result<bool>>(std::move(result));
    LoopServer& server = server_;
    const std::string name = name_;
    const std::string what = "detach " + name_;
    server.deviceCall(
        name, sender(), "Detach", options, true, what,
        [shared](const sdbus::Error& e) { replyError(shared, e); },
        [shared, &server, name, what](uint32_t uid, bool force) -> std::function<void()> {
          // On the worker: LOOP_CLR_FD, EBUSY retries, the wait for the kernel to let go.
          auto r = std::make_shared<Result<LoopDetachOutcome>>(makeError("not applied"));
          try {
            *r = server.backend()->detach(name, uid, force);
          } catch (const std::exception& e) {
            *r = makeError(what + ": internal error: " + e.what(), EIO);
          } catch (...) {
            *r = makeError(what + ": internal error", EIO);
          }
          return [shared, &server, name, what, r, uid, force] {
            if (!*r) {
              replyError(shared, server.errorOf(r->error(), name));
              return;
            }
            const LoopDetachOutcome& d = **r;
            server.log(BusLogLevel::Notice,
                       "uid " + std::to_string(uid) + ": " + what + (force ? " (force)" : "") +
                           (d.lazy ? " (lazy: still in use, detaches on last close)" : ""));
            if (d.detached) server.markGone(name);
            reply::results(*shared, "Detach", {}, d.lazy);
          };
        });
  }

  // The property getters the IDL asks for, one per row of the table (loop_props.h).
#define CXIOSYNC_LOOP_GETTER(P, field, key)                              \
  decltype(wire::wireValue(LoopInfo{}.field)) P() override {             \
    return prop<decltype(wire::wireValue(LoopInfo{}.field))>(            \
        #P, [](const LoopInfo& d) { return wire::wireValue(d.field); }); \
  }
  CXIOSYNC_LOOP_PROPERTIES(CXIOSYNC_LOOP_GETTER)
#undef CXIOSYNC_LOOP_GETTER

  LoopServer& server_;
  std::string name_;
  LoopInfo info_;
  std::chrono::steady_clock::time_point fetched_;
  bool refreshing_ = false;
};

// ---- the server -------------------------------------------------------------------------

LoopServer::LoopServer(sdbus::IConnection& conn, LoopBackend* backend, LoopAuthFn auth,
                       LoopLogFn log, LoopJobFn jobs)
    : conn_(conn),
      backend_(backend),
      auth_(std::move(auth)),
      log_(std::move(log)),
      jobs_(std::move(jobs)) {}

LoopServer::~LoopServer() = default;

void LoopServer::log(BusLogLevel level, const std::string& message) {
  if (!log_) return;
  try {
    log_(level, message);
  } catch (...) {
  }
}

sdbus::Error LoopServer::errorOf(const Error& e, const std::string& name) {
  const LoopErrorKind kind = loopErrorKindOf(e);
  if (kind == LoopErrorKind::NoSuchDevice && !name.empty()) markGone(name);
  return loopError(kind, e.message);
}

void LoopServer::markGone(const std::string& name) {
  if (objects_.count(name)) gone_.insert(name);
}

void LoopServer::collect() {
  for (const auto& name : gone_) {
    try {
      objects_.erase(name);
    } catch (...) {
    }
  }
  gone_.clear();
}

void LoopServer::exportDevice(const LoopInfo& info) {
  if (!wire::validLoopName(info.name)) return;
  gone_.erase(info.name);
  auto it = objects_.find(info.name);
  if (it != objects_.end()) {
    it->second->update(info);
    return;
  }
  try {
    objects_[info.name] = std::make_unique<LoopObject>(conn_, *this, info);
  } catch (const std::exception& e) {
    objects_.erase(info.name);
    log(BusLogLevel::Warning, "cannot export " + info.name + ": " + e.what());
  }
}

void LoopServer::updated(const std::string& name, const LoopInfo& info) {
  if (!info.bound) {
    markGone(name);
    return;
  }
  exportDevice(info);
  auto it = objects_.find(name);
  if (it != objects_.end()) it->second->emitAllChanged();
}

void LoopServer::refresh() {
  if (!backend_) return;
  try {
    auto all = backend_->list(true);
    if (!all) {
      log(BusLogLevel::Warning, "listing loop devices: " + all.error().message);
      return;
    }
    std::set<std::string> seen;
    for (const auto& d : *all) {
      seen.insert(d.name);
      exportDevice(d);
    }
    for (const auto& [name, obj] : objects_) {
      if (!seen.count(name)) gone_.insert(name);
    }
  } catch (const std::exception& e) {
    log(BusLogLevel::Warning, std::string("listing loop devices: internal error: ") + e.what());
  } catch (...) {
  }
}

void LoopServer::refreshed(const std::string& name, Result<LoopInfo>& r) {
  auto it = objects_.find(name);
  if (it == objects_.end()) return;
  it->second->refreshDone();
  if (r) {
    if (!r->bound) markGone(name);
    it->second->update(*r);
  } else if (r.error().code == ENOENT) {
    markGone(name);
  }
}

void LoopServer::list(sdbus::Result<std::vector<wire::LoopEntry>>&& result,
                      const wire::Options& options) {
  using R = sdbus::Result<std::vector<wire::LoopEntry>>;
  auto shared = std::make_shared<R>(std::move(result));
  LoopLogFn logFn = log_;
  FailFn fail = [shared, logFn](const sdbus::Error& e) {
    reply::error(*shared, "LoopList", e, logFn);
  };
  auto opt = wire::parseLoopCallOptions(options, true);
  if (!opt) {
    fail(loopError(LoopErrorKind::InvalidArgument, opt.error().message));
    return;
  }
  if (!backend_) {
    fail(notSupportedError());
    return;
  }
  LoopBackend* backend = backend_;
  const bool all = opt->all;
  offLoop<Result<std::vector<LoopInfo>>>(
      [backend]() -> Result<std::vector<LoopInfo>> {
        try {
          return backend->list(true);
        } catch (const std::exception& e) {
          return makeError(std::string("listing loop devices: internal error: ") + e.what(), EIO);
        }
      },
      [this, shared, all, fail](Result<std::vector<LoopInfo>>& r) {
        if (!r) {
          fail(compat::error(loopErrorName(r.error()), r.error().message));
          return;
        }
        listed(*r, all, *shared);
      },
      fail);
}

void LoopServer::listed(std::vector<LoopInfo>& all, bool showForeign,
                        sdbus::Result<std::vector<wire::LoopEntry>>& result) {
  std::set<std::string> seen;
  std::vector<wire::LoopEntry> out;
  for (const auto& d : all) {
    seen.insert(d.name);
    exportDevice(d);
    if (d.foreign && !showForeign) continue;
    if (!wire::validLoopName(d.name)) continue;
    out.emplace_back(sdbus::ObjectPath(wire::loopObjectPath(d.name)), wire::toWire(d));
  }
  for (const auto& [name, obj] : objects_) {
    if (!seen.count(name)) gone_.insert(name);
  }
  reply::results(result, "LoopList", log_, out);
}

void LoopServer::setup(sdbus::Result<sdbus::ObjectPath, sdbus::UnixFd>&& result, sdbus::UnixFd fd,
                       const wire::Options& options, const std::string& sender) {
  using R = sdbus::Result<sdbus::ObjectPath, sdbus::UnixFd>;
  auto shared = std::make_shared<R>(std::move(result));
  // The received fd is ours (a dup made by sdbus); it is closed when the last copy of this
  // pointer goes, whatever happens: after the job that uses it, on the loop thread.
  auto backing = std::make_shared<sdbus::UnixFd>(std::move(fd));
  try {
    auto req = wire::parseLoopSetupOptions(options);
    if (!req) throw loopError(LoopErrorKind::InvalidArgument, req.error().message);
    if (backing->get() < 0) {
      throw loopError(LoopErrorKind::InvalidArgument, "no backing file descriptor");
    }
    if (!backend_) throw notSupportedError();
    // F_GETFL reads the open file's flags and never reaches its filesystem (safe on FUSE).
    const int mode = ::fcntl(backing->get(), F_GETFL);
    if (mode >= 0 && (mode & O_ACCMODE) == O_WRONLY) {
      throw loopError(LoopErrorKind::InvalidArgument,
                      "the backing file descriptor is write-only; open it for reading "
                      "(O_RDONLY for a read-only device, O_RDWR otherwise)");
    }
    size_t open = 0, limit = 0;
    if (!fdHeadroom(&open, &limit)) {
      throw loopError(LoopErrorKind::Busy,
                      "Not now: the daemon holds " + std::to_string(open) +
                          " file descriptors (limit " + std::to_string(limit) +
                          "), too many for another waiting LoopSetup; try again later");
    }
    LoopAuthRequest ar;
    ar.sender = sender;
    ar.what = "set up a loop device";
    ar.interactive = req->interactive;
    ar.holdsFds = true;
    ar.decide = [](uint32_t) { return LoopAuthRequest::Decision{kLoopSetupAction, {}}; };
    const LoopSetupOptions asked = req->options;
    auth_(
        std::move(ar),
        // Where the nbd server may start in the caller's cgroup, its pid is asked of the bus
        // first (0 = unknown: such a setup then fails, see nbd_cgroup.h).
        [this, shared, backing, asked, sender](uint32_t uid) {
          if (!pid_ || !wire::loopSetupNeedsCallerPid(asked, uid)) {
            setupAllowed(shared, backing, asked, uid);
            return;
          }
          pid_(sender, [this, shared, backing, asked, uid](uint32_t pid, const std::string& error) {
            if (pid == 0) log(BusLogLevel::Info, "cannot learn the caller's pid: " + error);
            LoopSetupOptions withPid = asked;
            withPid.callerPid = pid;
            setupAllowed(shared, backing, withPid, uid);
          });
        },
        [this, shared, backing](const Refusal& refusal) {
          backing->reset();
          log(BusLogLevel::Info, "refused: " + refusal.message);
          replyError(shared, compat::error(refusal.errorName(), refusal.message));
        });
  } catch (const sdbus::Error& e) {
    replyError(shared, e);
  } catch (const std::exception& e) {
    log(BusLogLevel::Warning, std::string("LoopSetup: internal error: ") + e.what());
    replyError(shared, loopError(LoopErrorKind::Failed,
                                 std::string("LoopSetup: internal error: ") + e.what()));
  } catch (...) {
    replyError(shared, loopError(LoopErrorKind::Failed, "LoopSetup: internal error"));
  }
}

void LoopServer::setupAllowed(
    const std::shared_ptr<sdbus::Result<sdbus::ObjectPath, sdbus::UnixFd>>& shared,
    const std::shared_ptr<sdbus::UnixFd>& backing, const LoopSetupOptions& options, uint32_t uid) {
  LoopBackend* backend = backend_;
  offLoop<Result<LoopSetupOutcome>>(
      // On the worker: fstat/statx of the caller's fd, GET_FREE and EBUSY retries, the
      // configure ioctl, the device-node wait, sysfs writes, the ownership record.
      [backend, backing, options, uid]() -> Result<LoopSetupOutcome> {
        try {
          return backend->setup(backing->get(), options, uid);
        } catch (const std::exception& e) {
          return makeError(std::string("loop setup: internal error: ") + e.what(), EIO);
        } catch (...) {
          return makeError("loop setup: internal error", EIO);
        }
      },
      [this, shared, backing, options, uid](Result<LoopSetupOutcome>& r) {
        backing->reset();  // the device holds its own reference to the file
        if (!r) {
          replyError(shared, errorOf(r.error(), {}));
          return;
        }
        const LoopInfo& d = r->device;
        std::string line = "uid " + std::to_string(uid) + ": set up " + d.device + " (" +
                           describeSetup(options) + ") backed by " + d.backingFile +
                           "; direct I/O " + (d.directIo ? "on" : "off");
        if (!d.directIoNote.empty()) line += " (" + d.directIoNote + ")";
        line += std::string("; backend ") + backendKindName(d.backend) + ", " +
                std::to_string(d.workers) + " worker(s)";
        // What the daemon changed or chose (partscan turned off for a non-root caller,
        // the auto rule's reason, ...): the caller's reply has no room for it.
        for (const auto& note : r->notes) line += "; " + note;
        log(BusLogLevel::Notice, line);
        exportDevice(d);
        // Should the caller have gone, the device stays (it is recorded and listed).
        try {
          sdbus::UnixFd devFd(r->deviceFd.release(), sdbus::adopt_fd);
          reply::results(*shared, "LoopSetup", log_,
                         sdbus::ObjectPath(wire::loopObjectPath(d.name)), devFd);
        } catch (...) {
        }
      },
      [shared, backing](const sdbus::Error& e) {
        backing->reset();
        replyError(shared, e);
      });
}

void LoopServer::deviceCall(const std::string& name, const std::string& sender, const char* method,
                            const wire::Options& options, bool deleting, const std::string& what,
                            FailFn fail, RunFn run) {
  try {
    auto opt = wire::parseLoopCallOptions(options, false);
    if (!opt) throw loopError(LoopErrorKind::InvalidArgument, opt.error().message);
    if (!backend_) throw notSupportedError();
    LoopBackend* backend = backend_;
    const wire::LoopCallOptions o = *opt;
    // Even the lookup asks the kernel (LOOP_GET_STATUS64 stats the backing file): a job.
    offLoop<Result<LoopInfo>>(
        [backend, name] { return guardedShow(backend, name); },
        [this, name, sender, o, deleting, what, fail, run](Result<LoopInfo>& info) {
          if (!info) {
            fail(errorOf(info.error(), name));
            return;
          }
          authorizeDevice(*info, sender, o, deleting, what, fail, run);
        },
        fail);
  } catch (const sdbus::Error& e) {
    fail(e);
  } catch (const std::exception& e) {
    log(BusLogLevel::Warning, std::string(method) + ": internal error: " + e.what());
    fail(loopError(LoopErrorKind::Failed, std::string(method) + ": internal error: " + e.what()));
  } catch (...) {
    fail(loopError(LoopErrorKind::Failed, std::string(method) + ": internal error"));
  }
}

void LoopServer::authorizeDevice(const LoopInfo& device, const std::string& sender,
                                 const wire::LoopCallOptions& opt, bool deleting,
                                 const std::string& what, FailFn fail, RunFn run) {
  const std::string name = device.name;
  const bool force = opt.force;
  const char* others = deleting ? kLoopDeleteOthersAction : kLoopModifyOthersAction;
  LoopAuthRequest ar;
  ar.sender = sender;
  ar.what = what;
  ar.interactive = opt.interactive;
  LoopBackend* backend = backend_;
  ar.decide = [backend, device, force, others, name](uint32_t uid) {
    switch (backend->access(device, uid, force)) {
      case LoopAccessKind::Allowed:
        return LoopAuthRequest::Decision{};
      case LoopAccessKind::NeedsOthers:
        return LoopAuthRequest::Decision{others, {}};
      case LoopAccessKind::Refused:
        break;
    }
    std::string owner = device.foreignOwner.empty() ? "" : " (" + device.foreignOwner + ")";
    return LoopAuthRequest::Decision{
        {},
        name + " was not set up by cxiosync" + owner +
            "; foreign loop devices are changed only by root with force (uid " +
            std::to_string(uid) + (uid == 0 ? ", no force" : "") + ")"};
  };
  const uint32_t setupBy = device.setupByUid;
  using Finish = std::function<void()>;
  auth_(
      std::move(ar),
      [this, backend, name, force, fail, run, setupBy](uint32_t uid) {
        offLoop<Finish>(
            [this, backend, name, force, fail, run, setupBy, uid]() -> Finish {
              // The device may have changed hands while polkit was asked: look again.
              auto now = guardedShow(backend, name);
              if (!now) {
                Error e = now.error();
                return [this, fail, e, name] { fail(errorOf(e, name)); };
              }
              if (now->setupByUid != setupBy || now->foreign != (setupBy == kUnknownUid)) {
                return [fail, name] {
                  fail(loopError(LoopErrorKind::Busy,
                                 name + " changed owner during authorization; try again"));
                };
              }
              return run(uid, force);
            },
            [](Finish& finish) {
              if (finish) finish();
            },
            fail);
      },
      [this, fail](const Refusal& refusal) {
        log(BusLogLevel::Info, "refused: " + refusal.message);
        fail(compat::error(refusal.errorName(), refusal.message));
      });
}

}  // namespace cxiosync::dbus
