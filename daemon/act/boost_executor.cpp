// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/act/boost_executor.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>

#include "daemon/log/logging.h"
#include "policy/bytes_text.h"

namespace cxiosync {
namespace {

int64_t unixUsecNow() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double secondsBetween(TimePoint a, TimePoint b) {
  return std::chrono::duration<double>(b - a).count();
}

// The keys of `to` that differ from `from` (what a write has to carry).
IoLimits changedKeys(const IoLimits& from, const IoLimits& to) {
  IoLimits out;
  if (from.rbps != to.rbps) out.rbps = to.rbps;
  if (from.wbps != to.wbps) out.wbps = to.wbps;
  if (from.riops != to.riops) out.riops = to.riops;
  if (from.wiops != to.wiops) out.wiops = to.wiops;
  return out;
}

bool anyKey(const IoLimits& l) {
  return l.rbps || l.wbps || l.riops || l.wiops;
}

// A boost may only raise a limit, never tighten one.
bool lowersAny(const IoLimits& from, const IoLimits& to) {
  auto lower = [](const std::optional<uint64_t>& f, const std::optional<uint64_t>& t) {
    return f && t && *t < *f;
  };
  return lower(from.rbps, to.rbps) || lower(from.wbps, to.wbps) || lower(from.riops, to.riops) ||
         lower(from.wiops, to.wiops);
}

std::string limitsText(const IoLimits& l) {
  std::string out;
  auto key = [&](const char* n, const std::optional<uint64_t>& v) {
    if (!v) return;
    if (!out.empty()) out += ' ';
    out += n;
    out += '=';
    out += formatLimit(*v);
  };
  key("rbps", l.rbps);
  key("wbps", l.wbps);
  key("riops", l.riops);
  key("wiops", l.wiops);
  return out;
}

// A limit of 0 is never in force: the kernel keeps unset keys as "max", and systemd writes
// none. Kernels after the 6.10 blk-throttle rework showed io.max as zeros until commit
// 0a751df4566c ("blk-throttle: Fix incorrect display of io.max"), so a zero read is that
// display bug, and recording it as an original would restore a nonsense limit.
bool readsAsZero(const IoLimits& l) {
  for (const auto& v : {l.rbps, l.wbps, l.riops, l.wiops})
    if (v && *v == 0) return true;
  return false;
}

Error zeroReadRefusal(const std::string& holder, const std::string& dev, const IoLimits& read) {
  spdlog::warn(
      "not boosting {} on {}: io.max reads {}, which no limit in force looks like (the "
      "post-6.10 io.max display bug); an original is only recorded from a sane read  "
      "action=refuse-zero-read cgroup={} device={}",
      holder, dev, limitsText(read), logQuote(holder), dev);
  return makeError("io.max of " + holder + " on " + dev + " reads as zeros: " + limitsText(read),
                   EIO);
}

}  // namespace

bool isGoneCode(int code) {
  return code == ENOENT || code == ENODEV || code == ESTALE || code == ESRCH;
}

std::string formatLimit(uint64_t v) {
  return v == kUnlimited ? "max" : std::to_string(v);
}

IoLimits fullLimits(const std::optional<IoMaxEntry>& line) {
  IoLimits out{kUnlimited, kUnlimited, kUnlimited, kUnlimited};
  if (line) out = overlayLimits(out, line->limits);
  return out;
}

IoLimits overlayLimits(IoLimits base, const IoLimits& patch) {
  if (patch.rbps) base.rbps = patch.rbps;
  if (patch.wbps) base.wbps = patch.wbps;
  if (patch.riops) base.riops = patch.riops;
  if (patch.wiops) base.wiops = patch.wiops;
  return base;
}

std::string describeLimitChange(const IoLimits& from, const IoLimits& to) {
  std::string out;
  bool all = from == to;
  auto key = [&](const char* n, const std::optional<uint64_t>& f,
                 const std::optional<uint64_t>& t) {
    if (!all && f == t) return;
    if (!f && !t) return;
    if (!out.empty()) out += ", ";
    out += n;
    out += ' ';
    out += f ? formatLimit(*f) : "-";
    out += " -> ";
    out += t ? formatLimit(*t) : "-";
  };
  key("rbps", from.rbps, to.rbps);
  key("wbps", from.wbps, to.wbps);
  key("riops", from.riops, to.riops);
  key("wiops", from.wiops, to.wiops);
  return out;
}

BoostExecutor::BoostExecutor(IoMaxAccess& io, Journal& journal, bool dryRun)
    : io_(io), journal_(journal), dryRun_(dryRun) {}

std::vector<JournalRecord>::iterator BoostExecutor::find(const CgroupPath& cg, const DevNum& dev) {
  for (auto it = records_.begin(); it != records_.end(); ++it)
    if (it->boost.cgroup == cg && it->boost.device == dev) return it;
  return records_.end();
}

Status BoostExecutor::persist() {
  return journal_.save(records_);
}

std::vector<ActiveBoost> BoostExecutor::active() const {
  std::vector<ActiveBoost> out;
  out.reserve(records_.size());
  for (const auto& r : records_) out.push_back(r.boost);
  return out;
}

double BoostExecutor::activeBoostSeconds(TimePoint now) const {
  double s = 0;
  for (const auto& r : records_) s += std::max(0.0, secondsBetween(r.boost.started, now));
  return s;
}

Result<BoostExecutor::RecoverySummary> BoostExecutor::recover(TimePoint now) {
  RecoverySummary summary;
  auto loaded = journal_.load();
  if (!loaded) {
    spdlog::critical(
        "cannot read the boost journal {}: {} — refusing to run, since boosting now "
        "could overwrite the only record of an original io.max limit",
        journal_.path(), loaded.error().message);
    return loaded.error();
  }
  if (loaded->movedAsideTo) {
    summary.movedAside = loaded->movedAsideTo;
    spdlog::error(
        "boost journal {} is unreadable ({}); moved it aside to {} — limits it recorded are "
        "NOT restored automatically, inspect that file  action=journal-moved-aside path={} "
        "moved_to={}",
        journal_.path(), loaded->problem, *loaded->movedAsideTo, journal_.path(),
        *loaded->movedAsideTo);
  }
  if (!loaded->movedAsideTo && !loaded->problem.empty())
    spdlog::warn("boost journal {}: {}", journal_.path(), loaded->problem);
  recoverUnreadable(loaded->unreadable, summary);
  records_ = std::move(loaded->records);
  if (!records_.empty())
    spdlog::info("boost journal holds {} boost(s) from a previous run; restoring them",
                 records_.size());
  std::vector<JournalRecord> keep;
  for (const auto& rec : records_) {
    switch (restoreOne(rec, "recovery", now)) {
      case RestoreOutcome::Restored:
        ++summary.restored;
        break;
      case RestoreOutcome::KeptChanged:
        ++summary.keptChanged;
        break;
      case RestoreOutcome::Gone:
        ++summary.gone;
        break;
      case RestoreOutcome::Failed:
        ++summary.failed;
        keep.push_back(rec);
        break;
    }
  }
  records_ = std::move(keep);
  if (auto st = persist(); !st) {
    // Not fatal: the records are still in memory, and the old file still lists them.
    spdlog::error("cannot rewrite the boost journal {}: {}", journal_.path(), st.error().message);
  }
  return summary;
}

// A record that cannot be read stays in the journal and holds its cgroup back until the cgroup
// is gone, or a person has looked at io.max and removed the record (daemon stopped).
void BoostExecutor::recoverUnreadable(const std::vector<UnreadableRecord>& unreadable,
                                      RecoverySummary& summary) {
  std::vector<UnreadableRecord> keep;
  for (const auto& u : unreadable) {
    const std::string who = u.cgroup ? u.cgroup->display() : std::string("(unknown)");
    if (u.cgroup && u.device) {
      auto cur = io_.read(*u.cgroup, *u.device, 0);
      if (!cur && isGoneCode(cur.error().code)) {
        spdlog::info(
            "cgroup {} is gone; dropping its unreadable boost record  action=drop-gone "
            "cgroup={} device={}",
            who, logQuote(who), u.device->str());
        continue;
      }
    }
    spdlog::error(
        "boost journal {}: a record cannot be read ({}); {} — its io.max may still hold a "
        "lifted value: check it, then remove the record with the daemon stopped  "
        "action=journal-record-unreadable cgroup={} record={}",
        journal_.path(), u.reason,
        u.cgroup ? "cgroup " + who + " is not boosted while it is there"
                 : std::string("no cgroup is boosted while it is there"),
        logQuote(who), logQuote(utf8Prefix(u.text, 512)));
    keep.push_back(u);
  }
  summary.unreadable = keep.size();
  journal_.setUnreadable(std::move(keep));
}

const UnreadableRecord* BoostExecutor::heldBack(const CgroupPath& cg, const DevNum& dev) const {
  for (const auto& u : journal_.unreadable())
    if (!u.cgroup || (*u.cgroup == cg && (!u.device || *u.device == dev))) return &u;
  return nullptr;
}

Status BoostExecutor::start(const StartBoost& d, TimePoint now, bool shutdownLiftArg) {
  const bool shutdownLift = shutdownLiftArg || d.shutdownLift;
  const std::string holder = d.cgroup.display();
  const std::string dev = d.device.str();
  const std::string syncer =
      shutdownLift ? std::string("syncer=none (shutdown)")
                   : fmt::format(
                         "syncer_pid={} syncer_tid={} syncer_comm={} syncer_cgroup={} "
                         "syscall={}",
                         d.trigger.pid, d.trigger.tid, logQuote(d.trigger.comm),
                         logQuote(d.trigger.cgroup.display()), syncSyscallName(d.trigger.syscall));
  if (find(d.cgroup, d.device) != records_.end())
    return makeError("already boosted: " + holder + " " + dev, EEXIST);
  if (const UnreadableRecord* u = heldBack(d.cgroup, d.device))
    return makeError("not boosting " + holder + " " + dev +
                         ": the boost journal holds a record for it that cannot be read (" +
                         u->reason + ")",
                     EBUSY);

  auto cur = io_.read(d.cgroup, d.device, 0);
  if (!cur) {
    spdlog::warn("not boosting {} on {}: cannot read io.max: {}", holder, dev, cur.error().message);
    return cur.error();
  }
  const IoLimits original = fullLimits(cur->line);
  if (readsAsZero(original)) {
    ++stats_.failures;
    return zeroReadRefusal(holder, dev, original);
  }
  if (fullLimits(d.original) != original)
    spdlog::debug(
        "io.max of {} on {} changed since the snapshot ({} vs {}); using the current "
        "value as the original",
        holder, dev, limitsText(fullLimits(d.original)), limitsText(original));
  const IoLimits target = overlayLimits(original, d.boosted.limits);
  if (lowersAny(original, target))
    return makeError("refusing a boost that would lower a limit on " + holder + " " + dev + ": " +
                         describeLimitChange(original, target),
                     EINVAL);
  const IoLimits patch = changedKeys(original, target);
  if (!anyKey(patch)) return makeError("nothing to lift on " + holder + " " + dev, EALREADY);

  const std::string change = describeLimitChange(original, target);
  if (dryRun_) {
    spdlog::info(
        "dry-run: would boost {} on {}: {}  action=dry-run-boost cgroup={} "
        "dirtier={} device={} old={} new={} {} reason={}",
        holder, dev, change, logQuote(holder), logQuote(d.dirtier.display()), dev,
        logQuote(limitsText(original)), logQuote(limitsText(target)), syncer, logQuote(d.reason));
    return Ok{};
  }

  JournalRecord rec;
  rec.boost.cgroup = d.cgroup;
  rec.boost.device = d.device;
  rec.boost.original = IoMaxEntry{d.device, original};
  rec.boost.boosted = IoMaxEntry{d.device, target};
  rec.boost.started = now;
  if (!d.syncerTids.empty())
    rec.boost.syncerTids = d.syncerTids;
  else if (!shutdownLift)
    rec.boost.syncerTids.push_back(d.trigger.tid);
  rec.boost.shutdownLift = shutdownLift;
  rec.startedUnixUsec = unixUsecNow();
  rec.cgroupInode = cur->inode;
  records_.push_back(rec);
  if (auto st = persist(); !st) {
    records_.pop_back();
    ++stats_.failures;
    spdlog::error(
        "not boosting {} on {}: the journal cannot be written ({}); a boost without "
        "a record of the original limit is never made",
        holder, dev, st.error().message);
    return st.error();
  }

  auto written = io_.write(d.cgroup, cur->inode, IoMaxEntry{d.device, patch});
  if (!written) {
    ++stats_.failures;
    // Did anything change? Keep the record unless io.max is provably still the original.
    auto after = io_.read(d.cgroup, d.device, cur->inode);
    bool unchanged = after && fullLimits(after->line) == original;
    bool gone = !after && isGoneCode(after.error().code);
    if (unchanged || gone) {
      records_.pop_back();
      if (auto st = persist(); !st)
        spdlog::error("cannot rewrite the boost journal {}: {}", journal_.path(),
                      st.error().message);
    } else if (after) {
      records_.back().boost.boosted.limits = fullLimits(after->line);
      (void)persist();
    }
    spdlog::error("boost of {} on {} failed: {}{}", holder, dev, written.error().message,
                  unchanged || gone ? "" : " (io.max state unclear: record kept for restore)");
    return written.error();
  }
  const IoLimits actual = fullLimits(written.value());
  if (actual != target) {
    spdlog::warn(
        "io.max of {} on {} reads back as {} after writing {}; recording what the "
        "kernel holds",
        holder, dev, limitsText(actual), limitsText(target));
    records_.back().boost.boosted.limits = actual;
    if (auto st = persist(); !st)
      spdlog::error("cannot rewrite the boost journal {}: {}", journal_.path(), st.error().message);
  }
  ++stats_.boostsBySyscall[shutdownLift ? "shutdown" : syncSyscallName(d.trigger.syscall)];
  spdlog::info(
      "boost {} on {}: {}  action={} cgroup={} dirtier={} device={} old={} new={} {} "
      "reason={}",
      holder, dev, change, shutdownLift ? "shutdown-lift" : "boost", logQuote(holder),
      logQuote(d.dirtier.display()), dev, logQuote(limitsText(original)),
      logQuote(limitsText(actual)), syncer, logQuote(d.reason));
  return Ok{};
}

BoostExecutor::RestoreOutcome BoostExecutor::restoreOne(const JournalRecord& rec, const char* why,
                                                        TimePoint now) {
  const ActiveBoost& b = rec.boost;
  const std::string holder = b.cgroup.display();
  const std::string dev = b.device.str();
  const double dur = secondsBetween(b.started, now);
  auto cur = io_.read(b.cgroup, b.device, rec.cgroupInode);
  if (!cur) {
    if (isGoneCode(cur.error().code)) {
      spdlog::info(
          "cgroup {} is gone; dropping its boost record for {} (original {})  "
          "action=drop-gone cgroup={} device={} reason={}",
          holder, dev, limitsText(b.original.limits), logQuote(holder), dev, why);
      return RestoreOutcome::Gone;
    }
    spdlog::error("cannot read io.max of {} to restore {}: {}; will retry", holder, dev,
                  cur.error().message);
    ++stats_.failures;
    return RestoreOutcome::Failed;
  }
  const IoLimits now_ = fullLimits(cur->line);
  if (now_ != b.boosted.limits) {
    ++stats_.keptChanged;
    spdlog::warn(
        "io.max of {} on {} was changed by someone else during the boost: we wrote "
        "{}, it now holds {}; keeping their value (the original was {})  "
        "action=kept-changed cgroup={} device={} ours={} theirs={} original={} "
        "duration_sec={:.3f} reason={}",
        holder, dev, limitsText(b.boosted.limits), limitsText(now_), limitsText(b.original.limits),
        logQuote(holder), dev, logQuote(limitsText(b.boosted.limits)), logQuote(limitsText(now_)),
        logQuote(limitsText(b.original.limits)), dur, why);
    return RestoreOutcome::KeptChanged;
  }
  if (dryRun_) {
    // Dry run never wrote, so there is nothing of ours to restore. Unreachable in practice.
    return RestoreOutcome::Restored;
  }
  const IoLimits patch = changedKeys(now_, b.original.limits);
  if (!anyKey(patch)) return RestoreOutcome::Restored;
  auto written = io_.write(b.cgroup, rec.cgroupInode, IoMaxEntry{b.device, patch});
  if (!written) {
    if (isGoneCode(written.error().code)) {
      spdlog::info("cgroup {} vanished while restoring {}; dropping the record", holder, dev);
      return RestoreOutcome::Gone;
    }
    ++stats_.failures;
    spdlog::error("restoring io.max of {} on {} to {} failed: {}; will retry", holder, dev,
                  limitsText(b.original.limits), written.error().message);
    return RestoreOutcome::Failed;
  }
  spdlog::info(
      "restore {} on {}: {} after {:.3f}s ({})  action=restore cgroup={} device={} "
      "old={} new={} duration_sec={:.3f} reason={}",
      holder, dev, describeLimitChange(now_, b.original.limits), dur, why, logQuote(holder), dev,
      logQuote(limitsText(now_)), logQuote(limitsText(b.original.limits)), dur, why);
  return RestoreOutcome::Restored;
}

Status BoostExecutor::restore(const RestoreBoost& d, TimePoint now) {
  auto it = find(d.cgroup, d.device);
  if (it == records_.end())
    return makeError("no boost recorded for " + d.cgroup.display() + " " + d.device.str(), ENOENT);
  const char* why = endReasonName(d.why);
  JournalRecord rec = *it;
  auto outcome = restoreOne(rec, why, now);
  if (outcome == RestoreOutcome::Failed)
    return makeError("restore of " + d.cgroup.display() + " " + d.device.str() + " failed", EIO);
  stats_.boostSecondsTotal += std::max(0.0, secondsBetween(rec.boost.started, now));
  ++stats_.endsByReason[why];
  records_.erase(find(d.cgroup, d.device));
  if (auto st = persist(); !st)
    spdlog::error("cannot rewrite the boost journal {}: {}", journal_.path(), st.error().message);
  return Ok{};
}

void BoostExecutor::update(const UpdateBoost& d) {
  auto it = find(d.cgroup, d.device);
  if (it == records_.end() || it->boost.syncerTids == d.syncerTids) return;
  it->boost.syncerTids = d.syncerTids;
  if (auto st = persist(); !st)
    spdlog::warn("cannot rewrite the boost journal {}: {}", journal_.path(), st.error().message);
}

size_t BoostExecutor::restoreAll(EndReason why, TimePoint now) {
  std::vector<JournalRecord> keep;
  bool changed = false;
  for (const auto& rec : records_) {
    if (rec.boost.shutdownLift) {
      keep.push_back(rec);
      continue;
    }
    auto outcome = restoreOne(rec, endReasonName(why), now);
    if (outcome == RestoreOutcome::Failed) {
      keep.push_back(rec);
      continue;
    }
    changed = true;
    stats_.boostSecondsTotal += std::max(0.0, secondsBetween(rec.boost.started, now));
    ++stats_.endsByReason[endReasonName(why)];
  }
  records_ = std::move(keep);
  if (changed) {
    if (auto st = persist(); !st)
      spdlog::error("cannot rewrite the boost journal {}: {}", journal_.path(), st.error().message);
  }
  return records_.size();
}

}  // namespace cxiosync
