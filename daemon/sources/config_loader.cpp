// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/sources/config_loader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace cxiosync {

namespace {

Error ioError(const std::string& path, int err, std::string_view what = {}) {
  std::string msg = path + ": ";
  if (!what.empty()) msg += std::string(what) + ": ";
  return makeError(msg + std::strerror(err), err);
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};

// Regular-file names in `dir`, unsorted. ENOENT/ENOTDIR -> empty list.
Result<std::vector<std::string>> listRegularFiles(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::vector<std::string>{};
    return ioError(dir, errno, "cannot open directory");
  }
  std::unique_ptr<DIR, DirCloser> d(fdopendir(fd));
  if (!d) {
    int err = errno;
    close(fd);
    return ioError(dir, err, "cannot open directory");
  }
  std::vector<std::string> out;
  for (;;) {
    errno = 0;
    struct dirent* de = readdir(d.get());
    if (de == nullptr) {
      if (errno != 0) return ioError(dir, errno, "cannot read directory");
      break;
    }
    std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    // Follow symlinks. A symlink to /dev/null (systemd's way to mask a drop-in) is a character
    // device: keep it so that it masks the same name in lower-priority directories; it reads
    // as empty.
    if (fstatat(dirfd(d.get()), name.c_str(), &st, 0) != 0) continue;  // dangling symlink
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) continue;
    out.push_back(std::move(name));
  }
  return out;
}

}  // namespace

Result<std::string> readConfigFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return ioError(path, errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return ioError(path, err);
  }
  // /dev/null (a masked drop-in) reads as empty.
  if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
    close(fd);
    return std::string();
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return makeError(path + ": not a regular file", EINVAL);
  }
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return ioError(path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxConfigFileBytes) {
      close(fd);
      return makeError(path + ": larger than " + std::to_string(kMaxConfigFileBytes) + " bytes",
                       EFBIG);
    }
  }
  close(fd);
  return out;
}

Result<std::vector<std::string>> listConfigFiles(const std::string& configDir) {
  std::vector<std::string> out;
  const std::string main = configDir + "/" + std::string(kMainConfigFile);
  struct stat st {};
  if (stat(main.c_str(), &st) == 0) {
    out.push_back(main);
  } else if (errno != ENOENT && errno != ENOTDIR) {
    return ioError(main, errno);
  }
  const std::string dropInDir = configDir + "/" + std::string(kConfigDropInDir);
  auto names = listRegularFiles(dropInDir);
  if (!names) return names.error();
  std::vector<std::string> yaml;
  for (auto& n : *names) {
    if (n.empty() || n[0] == '.' || !endsWith(n, ".yaml") || n.size() == 5) continue;
    yaml.push_back(std::move(n));
  }
  std::sort(yaml.begin(), yaml.end());  // bytewise, like ls with LC_ALL=C
  for (const auto& n : yaml) out.push_back(dropInDir + "/" + n);
  return out;
}

namespace {

Result<Config> loadFiles(const std::vector<std::string>& paths) {
  std::vector<ConfigText> texts;
  texts.reserve(paths.size());
  for (const auto& p : paths) {
    auto text = readConfigFile(p);
    if (!text) return text.error();
    texts.push_back(ConfigText{p, std::move(*text)});
  }
  return parseConfig(texts);
}

}  // namespace

Result<Config> loadConfig(const std::string& configDir) {
  auto files = listConfigFiles(configDir);
  if (!files) return files.error();
  return loadFiles(*files);
}

Result<Config> checkConfigPath(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return ioError(path, errno);
  if (S_ISDIR(st.st_mode)) return loadConfig(path);
  return loadFiles({path});
}

Result<UnitDropIns> loadDropInFiles(const std::vector<std::string>& orderedPaths) {
  std::vector<ConfigText> texts;
  for (const auto& p : orderedPaths) {
    auto text = readConfigFile(p);
    if (!text) return text.error();
    texts.push_back(ConfigText{p, std::move(*text)});
  }
  auto settings = parseDropIns(texts);
  if (!settings) return settings.error();
  return UnitDropIns{orderedPaths, std::move(*settings)};
}

Result<std::vector<std::string>> findUnitDropIns(std::string_view unit, const std::string& root,
                                                 const std::vector<std::string>& searchPath) {
  if (!isValidUnitName(unit)) {
    return makeError("'" + std::string(unit) + "' is not a valid unit name", EINVAL);
  }
  std::vector<std::string> dirs;
  for (const auto& d : dropInDirsFor(unit, searchPath)) dirs.push_back(root + d);
  std::vector<FoundDropIn> found;
  for (const auto& d : dirs) {
    auto names = listRegularFiles(d);
    if (!names) return names.error();
    for (auto& n : *names) found.push_back(FoundDropIn{d, std::move(n)});
  }
  return orderDropInFiles(dirs, found);
}

Result<UnitDropIns> loadUnitDropIns(std::string_view unit, const std::string& root,
                                    const std::vector<std::string>& searchPath) {
  auto files = findUnitDropIns(unit, root, searchPath);
  if (!files) return files.error();
  return loadDropInFiles(*files);
}

}  // namespace cxiosync
