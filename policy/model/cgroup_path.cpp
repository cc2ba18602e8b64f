// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/model/cgroup_path.h"

#include "policy/quote.h"

namespace cxiosync {

Result<CgroupPath> CgroupPath::parse(std::string_view text) {
  if (text.size() > kMaxPathLength) {
    return makeError("cgroup path too long (" + std::to_string(text.size()) + " > " +
                     std::to_string(kMaxPathLength) + " bytes)");
  }
  std::string rel;
  rel.reserve(text.size());
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t slash = text.find('/', pos);
    if (slash == std::string_view::npos) slash = text.size();
    std::string_view comp = text.substr(pos, slash - pos);
    pos = slash + 1;
    if (comp.empty()) continue;  // leading, trailing or doubled slash
    if (comp == "." || comp == "..") {
      return makeError("cgroup path " + quoteForMessage(text) + ": component '" +
                       std::string(comp) + "' is not allowed");
    }
    if (comp.size() > kMaxNameLength) {
      return makeError("cgroup path " + quoteForMessage(text) + ": component longer than " +
                       std::to_string(kMaxNameLength) + " bytes");
    }
    for (char ch : comp) {
      auto c = static_cast<unsigned char>(ch);
      if (c == 0) return makeError("cgroup path " + quoteForMessage(text) + ": contains NUL");
      if (c < 0x20 || c == 0x7f) {
        return makeError("cgroup path " + quoteForMessage(text) + ": contains a control character");
      }
    }
    if (!rel.empty()) rel += '/';
    rel.append(comp);
  }
  return CgroupPath(std::move(rel));
}

CgroupPath CgroupPath::parent() const {
  auto slash = rel_.rfind('/');
  if (slash == std::string::npos) return CgroupPath();
  return CgroupPath(rel_.substr(0, slash));
}

std::vector<CgroupPath> CgroupPath::ancestorsAndSelf() const {
  std::vector<CgroupPath> out;
  out.emplace_back();  // root
  if (rel_.empty()) return out;
  size_t pos = 0;
  while (true) {
    auto slash = rel_.find('/', pos);
    if (slash == std::string::npos) break;
    out.push_back(CgroupPath(rel_.substr(0, slash)));
    pos = slash + 1;
  }
  out.push_back(*this);
  return out;
}

bool CgroupPath::isAncestorOrSelfOf(const CgroupPath& other) const {
  if (rel_.empty()) return true;
  if (other.rel_.size() < rel_.size()) return false;
  if (other.rel_.compare(0, rel_.size(), rel_) != 0) return false;
  return other.rel_.size() == rel_.size() || other.rel_[rel_.size()] == '/';
}

}  // namespace cxiosync
