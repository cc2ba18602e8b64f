// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/blockdev/loop_types.h"

#include <cerrno>
#include <charconv>

namespace cxiosync {

const char* blockSizeSourceName(BlockSizeSource s) {
  switch (s) {
    case BlockSizeSource::Caller:
      return "caller";
    case BlockSizeSource::DioAlign:
      return "dio-align";
    case BlockSizeSource::BackingBdev:
      return "backing-bdev";
    case BlockSizeSource::Probe:
      return "probe";
    case BlockSizeSource::Default:
      return "default";
  }
  return "default";
}

Status validateLoopOptions(const LoopOptions& o) {
  if (!validBlockSize(o.blockSize))
    return makeError("block size must be a power of two between " + std::to_string(kMinBlockSize) +
                         " and " + std::to_string(kMaxBlockSize) + ", not " +
                         std::to_string(o.blockSize),
                     EINVAL);
  if (o.offset > static_cast<uint64_t>(INT64_MAX))
    return makeError("offset " + std::to_string(o.offset) + " is too large", EINVAL);
  if (o.queueDepth != 0 && (o.queueDepth < kMinQueueDepth || o.queueDepth > kMaxQueueDepth))
    return makeError("queue depth must be between " + std::to_string(kMinQueueDepth) +
                         " and the loop module's hw_queue_depth, not " +
                         std::to_string(o.queueDepth),
                     EINVAL);
  if (o.sizeLimit > static_cast<uint64_t>(INT64_MAX))
    return makeError("size limit " + std::to_string(o.sizeLimit) + " is too large", EINVAL);
  return Ok{};
}

const char* fsMagicName(uint64_t magic) {
  switch (magic) {
    case 0xEF53:
      return "ext4";
    case 0x01021994:
      return "tmpfs";
    case 0x858458f6:
      return "ramfs";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x794c7630:
      return "overlayfs";
    case 0x01021997:
      return "9p";
    case 0x6969:
      return "nfs";
    case 0x65735546:
      return "fuse";
    case 0xFF534D42:
      return "cifs";
    case 0xF2F52010:
      return "f2fs";
    case 0x4d44:
      return "vfat";
    case 0x2011BAB0:
      return "exfat";
    case 0x5346544e:
      return "ntfs";
    case 0x73717368:
      return "squashfs";
    case 0xE0F5E1E2:
      return "erofs";
    case 0x2fc12fc1:
      return "zfs";
    case 0x62656572:
      return "sysfs";
    case 0x9fa0:
      return "proc";
    default:
      return "";
  }
}

static uint32_t dioAlignment(const BackingInfo& b) {
  if (b.dioAlignKnown && b.dioOffsetAlign > 0) return b.dioOffsetAlign;
  if (b.bdevLogicalBlockSize > 0) return b.bdevLogicalBlockSize;
  return 512;
}

BlockSizeChoice chooseBlockSize(const LoopOptions& o, const BackingInfo& b) {
  if (o.blockSize != 0) return {o.blockSize, BlockSizeSource::Caller};
  if (o.directIo == DirectIoMode::Off) return {0, BlockSizeSource::Default};
  if (b.dioAlignKnown && b.dioOffsetAlign > 0)
    return {b.dioOffsetAlign < 512 ? 512u : b.dioOffsetAlign, BlockSizeSource::DioAlign};
  if (b.bdevLogicalBlockSize > 0)
    return {b.bdevLogicalBlockSize < 512 ? 512u : b.bdevLogicalBlockSize,
            BlockSizeSource::BackingBdev};
  return {0, BlockSizeSource::Default};
}

static std::string fsLabel(const BackingInfo& b) {
  if (b.isBlockDevice) return "block device";
  std::string n = fsMagicName(b.fsMagic);
  if (n.empty()) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, b.fsMagic, 16);
    n = "filesystem 0x" + std::string(buf, r.ptr);
  }
  return n;
}

std::string predictDirectIoRefusal(const BackingInfo& b, uint64_t offset, uint32_t blockSize) {
  if (b.dioAlignKnown && b.dioOffsetAlign == 0)
    return fsLabel(b) + " does not support direct I/O on this file (statx reports no " +
           "direct-I/O alignment)";
  const uint32_t align = dioAlignment(b);
  const uint32_t bs = blockSize == 0 ? 512 : blockSize;
  if (offset % align != 0)
    return "offset " + std::to_string(offset) + " is not a multiple of the backing file's " +
           "direct-I/O alignment " + std::to_string(align);
  if (bs < align)
    return "block size " + std::to_string(bs) + " is smaller than the backing file's " +
           "direct-I/O alignment " + std::to_string(align);
  return "";
}

const char* foreignOwnerName(ForeignOwner o) {
  switch (o) {
    case ForeignOwner::None:
      return "";
    case ForeignOwner::Snap:
      return "snap";
    case ForeignOwner::Systemd:
      return "systemd";
    case ForeignOwner::Udisks:
      return "udisks";
    case ForeignOwner::Manual:
      return "manual";
  }
  return "";
}

static bool startsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

ForeignOwner guessForeignOwner(std::string_view f) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (f.size() >= kDeleted.size() && f.substr(f.size() - kDeleted.size()) == kDeleted)
    f.remove_suffix(kDeleted.size());
  if (startsWith(f, "/var/lib/snapd/") || startsWith(f, "/snap/")) return ForeignOwner::Snap;
  if (startsWith(f, "/run/udisks2/") || startsWith(f, "/var/lib/udisks2/"))
    return ForeignOwner::Udisks;
  for (std::string_view p :
       {"/var/lib/portables/", "/run/portables/", "/usr/lib/portables/", "/var/lib/machines/",
        "/var/lib/extensions/", "/run/extensions/", "/usr/lib/extensions/", "/var/lib/confexts/",
        "/run/confexts/", "/etc/extensions/", "/etc/confexts/", "/run/systemd/",
        "/var/lib/systemd/", "/.extra/"}) {
    if (startsWith(f, p)) return ForeignOwner::Systemd;
  }
  // systemd-homed: /home/NAME.home
  if (startsWith(f, "/home/") && f.size() > 11 && f.substr(f.size() - 5) == ".home" &&
      f.find('/', 6) == std::string_view::npos)
    return ForeignOwner::Systemd;
  return ForeignOwner::Manual;
}

Result<int> parseLoopName(std::string_view text) {
  std::string_view t = text;
  if (startsWith(t, "/dev/")) t.remove_prefix(5);
  if (startsWith(t, "loop")) t.remove_prefix(4);
  int v = -1;
  if (t.empty() || t.size() > 7)
    return makeError("not a loop device: \"" + std::string(text) + "\"", EINVAL);
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc{} || r.ptr != t.data() + t.size() || v < 0)
    return makeError("not a loop device: \"" + std::string(text) + "\"", EINVAL);
  return v;
}

}  // namespace cxiosync
