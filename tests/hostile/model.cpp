// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/hostile/model.h"

#include "policy/config/values.h"

#include <sys/stat.h>

#include <cctype>

namespace cxiosync::hostile {

namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (i + 3 < text.size() && text[i] == '\\' && text[i + 1] == 'x' && hex(text[i + 2]) >= 0 &&
        hex(text[i + 3]) >= 0) {
      int b = hex(text[i + 2]) * 16 + hex(text[i + 3]);
      if (b >= 0x80 || b == 0x5c) {
        out.push_back(static_cast<char>(b));
        i += 4;
        continue;
      }
    }
    out.push_back(text[i++]);
  }
  return out;
}

std::optional<std::string> cgroupPath(const std::string& text) {
  const std::string bytes = unescape(text);
  if (bytes.empty() || bytes.size() > 4096) return std::nullopt;
  std::string rel;
  size_t pos = 0;
  while (pos <= bytes.size()) {
    size_t slash = bytes.find('/', pos);
    if (slash == std::string::npos) slash = bytes.size();
    std::string comp = bytes.substr(pos, slash - pos);
    pos = slash + 1;
    if (comp.empty()) continue;
    if (comp == "." || comp == ".." || comp.size() > 255) return std::nullopt;
    for (unsigned char c : comp) {
      if (c < 0x20 || c == 0x7f) return std::nullopt;
    }
    if (!rel.empty()) rel += '/';
    rel += comp;
  }
  return rel;
}

bool cgroupExists(const std::filesystem::path& root, const std::string& rel) {
  std::string at = root.string();
  struct stat st {};
  if (lstat(at.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  size_t pos = 0;
  while (pos < rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string::npos) slash = rel.size();
    at += "/" + rel.substr(pos, slash - pos);
    pos = slash + 1;
    if (lstat(at.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  }
  return true;
}

// The bus takes a config file's values (issue 27: one value syntax): the oracle is the config
// parser itself, so a bus call and a YAML line can never disagree.
bool validCeiling(const std::string& text) {
  return static_cast<bool>(cxiosync::parseBoostCeiling(text));
}

bool validBoostPolicy(const std::string& text) {
  return static_cast<bool>(cxiosync::parseBoostPermission(text));
}

std::vector<OptionRule> optionRules(const std::string& method) {
  if (method == "SetIsolation" || method == "SetBoostPolicy" || method == "SetBoostCeiling" ||
      method == "SetTenant")
    return {{"interactive", "b"}, {"runtime", "b"}};
  if (method == "LoopList") return {{"interactive", "b"}, {"all", "b"}};
  if (method == "LoopSetup")
    return {{"read_only", "b"},  {"offset", "t"},      {"size_limit", "t"},  {"block_size", "u"},
            {"direct_io", "s"},  {"autoclear", "b"},   {"partscan", "b"},    {"backend", "s"},
            {"workers", "u"},    {"queue_depth", "u"}, {"nbd_timeout", "u"}, {"server_cgroup", "s"},
            {"interactive", "b"}};
  if (method == "SetDirectIO" || method == "SetBlockSize" || method == "SetCapacity" ||
      method == "SetAutoclear" || method == "SetWorkers" || method == "SetQueueDepth" ||
      method == "Detach")
    return {{"interactive", "b"}, {"force", "b"}};
  return {{"interactive", "b"}};  // reads, ResetPolicy, Reload
}

}  // namespace cxiosync::hostile
