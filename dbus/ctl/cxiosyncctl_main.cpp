// SPDX-License-Identifier: GPL-2.0-or-later
// cxiosyncctl: thin shell around dbus/ctl/cli.h (parsing and verbs live in the library).
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dbus/ctl/cli.h"

namespace {

void writeAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // EPIPE (reader gone) and the like: nothing useful left to do
    }
    off += static_cast<size_t>(n);
  }
}

bool colorTerminal() {
  if (!isatty(STDOUT_FILENO)) return false;
  if (std::getenv("NO_COLOR")) return false;
  const char* term = std::getenv("TERM");
  return !(term && std::strcmp(term, "dumb") == 0);
}

// systemd-style pager: $SYSTEMD_PAGER / $PAGER, else less with FRSXMK; only on a terminal.
void page(const std::string& text, bool noPager) {
  if (noPager || !isatty(STDOUT_FILENO)) {
    writeAll(STDOUT_FILENO, text);
    return;
  }
  const char* pager = std::getenv("SYSTEMD_PAGER");
  if (!pager) pager = std::getenv("PAGER");
  if (!pager) pager = "less";
  if (!*pager || std::strcmp(pager, "cat") == 0) {
    writeAll(STDOUT_FILENO, text);
    return;
  }
  setenv("LESS", "FRSXMK", 0);
  FILE* p = popen(pager, "w");
  if (!p) {
    writeAll(STDOUT_FILENO, text);
    return;
  }
  fwrite(text.data(), 1, text.size(), p);
  pclose(p);
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto inv = cxiosync::ctl::parseArgs(args);
  if (!inv) {
    std::string msg = "cxiosyncctl: " + inv.error().message + "\n";
    writeAll(STDERR_FILENO, msg);
    return cxiosync::ctl::kExitInvalidArgs;
  }

  // monitor runs until SIGINT/SIGTERM: take them as a readable fd, so the loop ends cleanly.
  int stopFd = -1;
  if (inv->verb == "monitor") {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    stopFd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  }

  cxiosync::ctl::Io io;
  io.out = [](const std::string& s) { writeAll(STDOUT_FILENO, s); };
  io.err = [](const std::string& s) { writeAll(STDERR_FILENO, s); };
  const bool noPager = inv->options.noPager;
  io.page = [noPager](const std::string& s) { page(s, noPager); };
  io.color = colorTerminal();
  io.stopFd = stopFd;
  int rc = cxiosync::ctl::run(*inv, io);
  if (stopFd >= 0) close(stopFd);
  return rc;
}
