// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/blockdev/loop_vocab.h"

#include <cerrno>
#include <string>

namespace cxiosync {

const char* backendKindName(BackendKind k) {
  switch (k) {
    case BackendKind::Kernel:
      return "kernel";
    case BackendKind::Nbd:
      return "nbd";
    case BackendKind::Auto:
      return "auto";
  }
  return "auto";
}

std::optional<BackendKind> backendKindFromName(std::string_view name) {
  for (BackendKind k : {BackendKind::Kernel, BackendKind::Nbd, BackendKind::Auto})
    if (name == backendKindName(k)) return k;
  return std::nullopt;
}

Result<BackendKind> parseBackendKind(std::string_view text) {
  if (text == "loop") return BackendKind::Kernel;
  if (auto k = backendKindFromName(text)) return *k;
  return makeError("backend must be kernel, nbd or auto, not \"" + std::string(text) + "\"",
                   EINVAL);
}

const char* directIoModeName(DirectIoMode m) {
  switch (m) {
    case DirectIoMode::Auto:
      return "auto";
    case DirectIoMode::On:
      return "on";
    case DirectIoMode::Off:
      return "off";
  }
  return "auto";
}

std::optional<DirectIoMode> directIoModeFromName(std::string_view name) {
  for (DirectIoMode m : {DirectIoMode::Auto, DirectIoMode::On, DirectIoMode::Off})
    if (name == directIoModeName(m)) return m;
  return std::nullopt;
}

Result<DirectIoMode> parseDirectIoMode(std::string_view text) {
  if (auto m = directIoModeFromName(text)) return *m;
  if (text == "yes" || text == "true" || text == "1") return DirectIoMode::On;
  if (text == "no" || text == "false" || text == "0") return DirectIoMode::Off;
  return makeError("direct I/O mode must be auto, on or off, not \"" + std::string(text) + "\"",
                   EINVAL);
}

bool validBlockSize(uint64_t size) {
  return size == 0 || (size >= kMinBlockSize && size <= kMaxBlockSize && (size & (size - 1)) == 0);
}

bool validLoopName(std::string_view name) {
  const size_t p = name.substr(0, 4) == "loop" ? 4 : name.substr(0, 3) == "nbd" ? 3 : 0;
  if (p == 0 || name.size() <= p || name.size() > p + 9) return false;
  for (size_t i = p; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return !(name.size() > p + 1 && name[p] == '0');
}

}  // namespace cxiosync
