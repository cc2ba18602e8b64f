// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// A cgroup path relative to the cgroup2 root, normalized: "" is the root, "a/b" a child.
// Built only through parse(), which rejects anything that could escape the root.
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "policy/result.h"

namespace cxiosync {

class CgroupPath {
 public:
  static constexpr size_t kMaxPathLength = 4096;
  static constexpr size_t kMaxNameLength = 255;

  CgroupPath() = default;  // the root

  // Accepts "/", "", "/a/b", "a/b/", "a//b" (normalized). Rejects "..", ".", NUL, control
  // characters, components longer than kMaxNameLength, paths longer than kMaxPathLength.
  static Result<CgroupPath> parse(std::string_view text);

  bool isRoot() const { return rel_.empty(); }
  const std::string& relative() const { return rel_; }  // "a/b", "" for root
  std::string display() const { return "/" + rel_; }    // "/a/b", "/" for root
  CgroupPath parent() const;                            // root's parent is root
  std::vector<CgroupPath> ancestorsAndSelf() const;     // root first, self last
  bool isAncestorOrSelfOf(const CgroupPath& other) const;
  auto operator<=>(const CgroupPath&) const = default;

 private:
  explicit CgroupPath(std::string rel) : rel_(std::move(rel)) {}
  std::string rel_;
};

}  // namespace cxiosync
