// SPDX-License-Identifier: GPL-2.0-or-later
// The hand-written hostile calls and the seeded generator (calls.h).
#include <algorithm>
#include <string>
#include <vector>

#include "tests/hostile/calls.h"
#include "tests/hostile/model.h"

namespace cxiosync::hostile {

namespace {

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// A path of `bytes` bytes whose components are all short enough (200 bytes).
std::string longValidPath(size_t bytes) {
  std::string p;
  while (p.size() < bytes) {
    p += "/";
    p += std::string(std::min<size_t>(200, bytes - p.size()), 'p');
  }
  return p.substr(0, bytes);
}

struct Named {
  std::string value, label;
};

// Cgroup arguments: "..", control bytes, the \xNN escape of bytes that are not UTF-8 (also
// overlong forms of '/' and '.', a surrogate, beyond U+10FFFF), 4 KiB and 1 MiB.
const std::vector<Named>& hostilePaths() {
  static const std::vector<Named> v = {
      {"/system.slice/../..", "dot-dot"},
      {"/..", "dot-dot at the root"},
      {"..", "bare dot-dot"},
      {"/./cg1", "dot"},
      {"/cg1/.", "trailing dot"},
      {"/" + repeat("\xc3\xa9", 40) + "/..", "80 bytes of e-acute then dot-dot (issue 16)"},
      {"/a\x1b[31mb", "escape sequence"},
      {"/\x7f", "DEL"},
      {"/a\tb", "tab"},
      {"/a\nb", "newline"},
      {"/\x01", "SOH"},
      {"", "empty"},
      {"/" + std::string(256, 'n'), "256-byte component"},
      {"/" + std::string(255, 'n'), "255-byte component (valid, absent)"},
      {"/" + repeat("\\xff", 255), "255 escaped bytes = 1020 characters (valid, absent)"},
      {"/" + repeat("\\xff", 256), "256 escaped bytes"},
      {longValidPath(4096), "4 KiB path (valid, absent)"},
      {longValidPath(4097), "4 KiB + 1 path"},
      {"/" + repeat("a/", 2049), "2049 components"},
      {longValidPath(1 << 20), "1 MiB path"},
      {std::string(1 << 20, '/'), "1 MiB of slashes (the root)"},
      {"/\\xff", "escaped 0xff (valid, absent)"},
      {"/\\xc0\\xaf", "escaped overlong '/' (a name, absent)"},
      {"/\\xc0\\xae\\xc0\\xae", "escaped overlong '..' (a name, absent)"},
      {"/\\x2e\\x2e", "\\x2e\\x2e is text, not '..' (absent)"},
      {"/\\x2e\\x2e/..", "\\x2e\\x2e then dot-dot"},
      {"/\\xed\\xa0\\x80", "escaped surrogate (absent)"},
      {"/\\xf4\\x90\\x80\\x80", "escaped beyond U+10FFFF (absent)"},
      {"/\\x5c", "escaped backslash (absent)"},
      {"/\\x01", "\\x01 is text (absent)"},
      {"/\\", "lone backslash (absent)"},
      {"/link.slice", "symlink to a cgroup"},
      {"/link.slice/x", "below a symlink"},
      {"/cg1/io.max", "a file"},
      {"/\xe2\x80\xae", "right-to-left override (absent)"},
      {"/\xef\xbb\xbf", "BOM (absent)"},
      {"/\xf0\x9f\x98\x80", "emoji (absent)"},
      {"//cg1//", "doubled slashes"},
      {"cg1", "no leading slash"},
      {"/", "the root"},
  };
  return v;
}

const std::vector<Named>& ceilings() {
  static const std::vector<Named> v = {
      {"0", "zero"},
      {"-1", "minus one"},
      {"1", "one byte/s"},
      {"9223372036854775808", "2^63"},
      {"18446744073709551614", "2^64-2"},
      {"18446744073709551615", "2^64-1 (max is spelled max)"},
      {"18446744073709551616", "2^64"},
      {"17179869184Gi", "2^64 with a suffix"},
      {"16777216Ti", "2^64 in Ti"},
      {"16777215Ti", "2^64 - 2^40"},
      {"99999999999999999999999", "23 digits"},
      {"0x10", "hex"},
      {"1KI", "wrong suffix case"},
      {"1ki", "lower-case suffix"},
      {"1K", "K"},
      {"1Ki", "Ki"},
      {"1KiB", "KiB"},
      {"1.5M", "fraction"},
      {"1e3", "exponent"},
      {" 1", "leading space"},
      {"1 ", "trailing space"},
      {"+1", "plus"},
      {"\xd9\xa1", "Arabic-Indic digit one"},
      {"", "empty"},
      {"inherit", "inherit"},
      {"INHERIT", "INHERIT"},
      {"max", "max"},
      {"Max", "Max"},
      {"unlimited", "unlimited"},
      {"infinity", "infinity"},
      {std::string(4096, '9'), "4 KiB of nines"},
      {std::string(1 << 20, '1'), "1 MiB of ones"},
  };
  return v;
}

const std::vector<Named>& policies() {
  static const std::vector<Named> v = {
      {"allow", "allow"},
      {"deny", "deny"},
      {"ALLOW", "ALLOW"},
      {"deny ", "deny+space"},
      {"Allow", "Allow"},
      {"", "empty"},
      {"yes", "yes"},
      {"allow\x01", "allow+SOH"},
      {std::string(4096, 'a'), "4 KiB"},
      {std::string(1 << 20, 'd'), "1 MiB"},
  };
  return v;
}

Spec make(const std::string& method, std::string label) {
  Spec s;
  s.method = method;
  s.onLoop = method == "SetDirectIO" || method == "SetBlockSize" || method == "SetCapacity" ||
             method == "SetAutoclear" || method == "SetWorkers" || method == "SetQueueDepth" ||
             method == "Detach";
  s.label = std::move(label);
  s.fd = FdKind::ReadOnly;
  return s;
}

// Every D-Bus type but the right one for `key` (and the right one, once, with a valid value).
void wrongTypes(std::vector<Spec>& out, const std::string& method, const std::string& key,
                const std::string& right, std::mt19937_64& rng) {
  for (const auto& t : optionTypes()) {
    if (t == right) continue;
    Spec s = make(method, "option " + key + " of type " + t);
    s.text1 = "/cg1";
    s.options.push_back(option(key, t, rng));
    out.push_back(std::move(s));
  }
}

// Cgroup paths, ceilings and policies.
void scriptedArguments(std::vector<Spec>& out) {
  for (const auto& p : hostilePaths()) {
    Spec s = make("ShowCgroup", "path: " + p.label);
    s.text1 = p.value;
    out.push_back(s);
    s = make("SetIsolation", "path: " + p.label);
    s.text1 = p.value;
    s.flag = true;
    s.options.push_back(boolOption("runtime", true));
    out.push_back(s);
    s.method = "SetTenant";
    s.flag = (out.size() & 1) != 0;
    out.push_back(s);
  }
  for (const char* m : {"ResetPolicy", "SetBoostPolicy", "SetBoostCeiling"}) {
    for (const auto& p : {hostilePaths()[0], hostilePaths()[5], hostilePaths()[19],
                          hostilePaths()[21], hostilePaths()[31]}) {
      Spec s = make(m, "path: " + p.label);
      s.text1 = p.value;
      s.text2 = std::string(m) == "SetBoostPolicy" ? "deny" : "max";
      out.push_back(s);
    }
  }
  for (const auto& c : ceilings()) {
    Spec s = make("SetBoostCeiling", "ceiling: " + c.label);
    s.text1 = "/cg1";
    s.text2 = c.value;
    out.push_back(s);
  }
  for (const auto& p : policies()) {
    Spec s = make("SetBoostPolicy", "policy: " + p.label);
    s.text1 = "/cg1";
    s.text2 = p.value;
    out.push_back(s);
  }
}

// Options: every wrong type for a boolean, unknown and hostile keys, on every method.
void scriptedOptions(std::vector<Spec>& out) {
  std::mt19937_64 rng(16);  // the values inside wrong-typed options; the cases are fixed
  wrongTypes(out, "GetStatus", "interactive", "b", rng);
  wrongTypes(out, "SetIsolation", "runtime", "b", rng);
  wrongTypes(out, "LoopSetup", "offset", "t", rng);
  wrongTypes(out, "Detach", "force", "b", rng);
  wrongTypes(out, "SetTenant", "runtime", "b", rng);
  wrongTypes(out, "LoopSetup", "backend", "s", rng);
  wrongTypes(out, "LoopSetup", "workers", "u", rng);
  wrongTypes(out, "LoopSetup", "queue_depth", "u", rng);
  wrongTypes(out, "LoopSetup", "server_cgroup", "s", rng);
  wrongTypes(out, "SetQueueDepth", "force", "b", rng);
  const std::vector<Named> keys = {
      {"Interactive", "key case"},
      {"interactive ", "key with a space"},
      {"", "empty key"},
      {std::string(63, 'k') + "\xc3\xa9", "key cut at 64 bytes inside a character (issue 16)"},
      {"\x01", "control key"},
      {std::string(4096, 'k'), "4 KiB key"},
      {std::string(1 << 20, 'k'), "1 MiB key"},
      {"runtime", "runtime where it is not an option"},
      {"force", "force on the manager"},
  };
  for (const auto& m : managerMethods()) {
    for (const auto& k : keys) {
      if (k.value == "runtime" && (m == "SetIsolation" || m == "SetBoostPolicy" ||
                                   m == "SetBoostCeiling" || m == "SetTenant"))
        continue;
      Spec s = make(m, "options: " + k.label);
      s.text1 = "/cg1";
      s.text2 = m == "SetBoostPolicy" ? "allow" : "inherit";
      s.options.push_back(boolOption(k.value, true));
      out.push_back(std::move(s));
    }
  }
  // Valid calls, each once: reads answer, changes are refused or find no cgroup.
  for (const auto& m : managerMethods()) {
    Spec s = make(m, "well-formed");
    s.text1 = "/cg1";
    s.text2 = m == "SetBoostPolicy" ? "allow" : "inherit";
    s.options.push_back(boolOption("interactive", true));
    out.push_back(std::move(s));
  }
}

// LoopSetup's backend options (backend, workers, queue_depth, nbd_timeout): unknown
// spellings, numbers at the edges, the combinations an explicit backend cannot have; and the
// device methods that take a number (SetWorkers, SetQueueDepth).
void scriptedLoopBackends(std::vector<Spec>& out) {
  for (const std::string& v : std::vector<std::string>{
           "auto", "kernel", "nbd", "NBD", "Kernel", "", "kernel ", "nbd\n", "loop", "ublk",
           std::string("kernel\0", 7), std::string("kernel\0nbd", 10), "\\xff", "\xc3\xa9",
           std::string(4096, 'n'), std::string(1 << 20, 'k')}) {
    std::string shown = v.substr(0, 12);
    for (auto& c : shown)
      if (c == '\0') c = '0';
    Spec s = make("LoopSetup", "backend '" + shown + "' (" + std::to_string(v.size()) + " bytes)");
    s.options.push_back(stringOption("backend", v));
    out.push_back(std::move(s));
  }
  // A backing that is no file, with the nbd backend: InvalidArgument on every machine, not
  // NotSupported where nbd is missing (the backend used to be chosen before the fd was looked at).
  for (FdKind k : {FdKind::Socket, FdKind::OPath, FdKind::PipeRead, FdKind::DevNull}) {
    Spec s = make("LoopSetup", "backend nbd on a backing that is no file");
    s.fd = k;
    s.options.push_back(stringOption("backend", "nbd"));
    out.push_back(std::move(s));
  }
  // server_cgroup (whose cgroup runs an nbd server): only "caller" or "daemon", never with
  // the kernel backend.
  for (const std::string& v :
       std::vector<std::string>{"caller", "daemon", "Caller", "", "tenant", "/", "../..",
                                std::string("caller\0", 7), std::string(4096, 'c')}) {
    Spec s = make("LoopSetup", "server_cgroup '" + v.substr(0, 12) + "'");
    s.options.push_back(stringOption("server_cgroup", v));
    out.push_back(s);
    s.label += " with backend kernel";
    s.options.push_back(stringOption("backend", "kernel"));
    out.push_back(std::move(s));
  }
  for (const std::string raw : {"\xff",
                                "kern\xc0\xaf"
                                "el"}) {
    Spec s = make("LoopSetup", "backend: raw bytes that are not UTF-8");
    s.options.push_back(stringOption("backend", raw));
    out.push_back(std::move(s));
  }
  for (const char* key : {"workers", "queue_depth", "nbd_timeout"}) {
    for (uint32_t n : {0u, 1u, 2u, 3u, 4u, 16u, 17u, 128u, 65536u, 65537u, 86400u, 86401u,
                       0x80000000u, 0xffffffffu}) {
      Spec s = make("LoopSetup", std::string(key) + " = " + std::to_string(n));
      s.options.push_back(u32Option(key, n));
      out.push_back(std::move(s));
    }
    for (uint64_t n : {0ull, 0x8000000000000000ull, 0xffffffffffffffffull}) {
      Spec s = make("LoopSetup", std::string(key) + " as t = " + std::to_string(n));
      s.options.push_back(u64Option(key, n));
      out.push_back(std::move(s));
    }
    Option minusOne;
    minusOne.key = key;
    minusOne.type = "i";
    minusOne.value = sdbus::Variant(int32_t{-1});
    Spec s = make("LoopSetup", std::string(key) + " as i = -1");
    s.options.push_back(minusOne);
    out.push_back(std::move(s));
  }
  // An explicit backend and what it cannot have; and what it can.
  struct Combo {
    const char* backend;
    Option other;
  };
  for (const Combo& c : std::vector<Combo>{{"kernel", u32Option("workers", 2)},
                                           {"kernel", u32Option("workers", 1)},
                                           {"kernel", u32Option("nbd_timeout", 5)},
                                           {"kernel", u32Option("queue_depth", 64)},
                                           {"nbd", u64Option("offset", 512)},
                                           {"nbd", u64Option("size_limit", 512)},
                                           {"nbd", boolOption("autoclear", true)},
                                           {"nbd", boolOption("autoclear", false)},
                                           {"nbd", boolOption("partscan", true)},
                                           {"nbd", u32Option("queue_depth", 32)},
                                           {"nbd", u32Option("workers", 16)},
                                           {"nbd", u32Option("nbd_timeout", 86400)},
                                           {"auto", u32Option("workers", 4)}}) {
    Spec s = make("LoopSetup", std::string("backend ") + c.backend + " with " + c.other.key);
    s.options.push_back(stringOption("backend", c.backend));
    s.options.push_back(c.other);
    out.push_back(std::move(s));
  }
  for (const char* m : {"SetWorkers", "SetQueueDepth"}) {
    for (uint32_t n : {0u, 1u, 2u, 3u, 4u, 16u, 17u, 128u, 129u, 0x80000000u, 0xffffffffu}) {
      Spec s = make(m, std::string(m) + " " + std::to_string(n) + " with force");
      s.number = n;
      s.options.push_back(boolOption("force", true));
      out.push_back(std::move(s));
    }
  }
}

// LoopSetup: fds of every kind; numbers at the edges; unknown enum spellings. Every device
// method, with and without force.
void scriptedLoops(std::vector<Spec>& out) {
  for (int k = 0; k < kFdKinds; ++k) {
    Spec s = make("LoopSetup", std::string("fd: ") + fdKindName(static_cast<FdKind>(k)));
    s.fd = static_cast<FdKind>(k);
    s.options.push_back(boolOption("read_only", true));
    out.push_back(std::move(s));
  }
  for (uint64_t n :
       {0ull, 1ull, 0x7fffffffffffffffull, 0x8000000000000000ull, 0xffffffffffffffffull}) {
    for (const char* key : {"offset", "size_limit"}) {
      Spec s = make("LoopSetup", std::string(key) + " = " + std::to_string(n));
      s.options.push_back(u64Option(key, n));
      out.push_back(std::move(s));
    }
  }
  for (uint32_t n : {0u, 1u, 511u, 512u, 513u, 4096u, 65536u, 65537u, 0x80000000u, 0xffffffffu}) {
    Spec s = make("LoopSetup", "block_size = " + std::to_string(n));
    s.options.push_back(u32Option("block_size", n));
    out.push_back(std::move(s));
    s = make("SetBlockSize", "block size " + std::to_string(n));
    s.number = n;
    out.push_back(std::move(s));
  }
  for (const std::string& v : std::vector<std::string>{"AUTO", "auto ", "", "On", "yes", "\xc3\xa9",
                                                       std::string(1 << 20, 'o'), "on", "off"}) {
    Spec s = make("LoopSetup", "direct_io '" + v.substr(0, 8) + "'");
    s.options.push_back(stringOption("direct_io", v));
    out.push_back(std::move(s));
  }
  // Loop devices: every method, with and without force, and with broken options.
  for (const auto& m : loopMethods()) {
    for (int variant = 0; variant < 4; ++variant) {
      Spec s = make(m, "device call " + std::to_string(variant));
      s.flag = true;
      s.number = 4096;
      if (variant == 1) s.options.push_back(boolOption("force", false));
      if (variant == 2) s.options.push_back(stringOption("force", "yes"));
      if (variant == 3) {
        s.options.push_back(boolOption("force", true));
        s.options.push_back(boolOption("all", true));
      }
      out.push_back(std::move(s));
    }
  }
  scriptedLoopBackends(out);
  Spec list = make("LoopList", "all as a string");
  list.options.push_back(stringOption("all", "yes"));
  out.push_back(list);
}

// The signature: an argument missing, one too many, a wrong type; an unknown method; raw bytes
// the wire cannot carry.
void scriptedShapes(std::vector<Spec>& out) {
  std::vector<std::string> all = managerMethods();
  all.insert(all.end(), loopMethods().begin(), loopMethods().end());
  for (const auto& m : all) {
    for (Shape shape : {Shape::MissingArg, Shape::ExtraArg, Shape::WrongType}) {
      Spec s = make(m, shape == Shape::MissingArg ? "argument missing"
                       : shape == Shape::ExtraArg ? "extra argument"
                                                  : "wrong argument type");
      s.shape = shape;
      s.text1 = "/cg1";
      s.text2 = "allow";
      out.push_back(std::move(s));
    }
  }
  // Bytes that are not UTF-8, raw: D-Bus strings cannot carry them (sd-bus refuses to build
  // the message; dbus-daemon would drop a sender that sent one), so they reach the daemon only
  // as the \xNN text above. Counted apart as refused by the client library.
  for (const std::string raw : {"/\xff", "/\xc0\xaf", "/\xed\xa0\x80"}) {
    Spec s = make("ShowCgroup", "raw bytes that are not UTF-8");
    s.text1 = raw;
    out.push_back(std::move(s));
  }
  Spec unknown = make("GetStatus", "unknown method");
  unknown.shape = Shape::UnknownMethod;
  out.push_back(unknown);
}

}  // namespace

std::vector<Spec> scripted(Caller caller) {
  (void)caller;  // the same calls for both: expected() says what each caller gets
  std::vector<Spec> out;
  scriptedArguments(out);
  scriptedOptions(out);
  scriptedLoops(out);
  scriptedShapes(out);
  return out;
}

// ---- the generator -------------------------------------------------------------------------

namespace {

template <class T>
const T& choose(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

std::string randomComponent(std::mt19937_64& rng) {
  static const std::vector<std::string> pool = {"cg1",
                                                "cg2",
                                                "backup.slice",
                                                "system.slice",
                                                "user.slice",
                                                "link.slice",
                                                "io.max",
                                                "nope",
                                                ".",
                                                "..",
                                                "...",
                                                "\\xff",
                                                "\\xc0\\xae",
                                                "\\x2e",
                                                "\\x5c",
                                                "\\X41",
                                                "\\x",
                                                "\x01",
                                                "\x1b",
                                                "\x7f",
                                                "\t",
                                                "\xc3\xa9",
                                                "\xf0\x9f\x98\x80",
                                                "\xe2\x80\xae",
                                                "a b",
                                                "-",
                                                "*",
                                                "%s%n",
                                                "$(id)",
                                                "\\"};
  switch (std::uniform_int_distribution<int>(0, 11)(rng)) {
    case 0:
      return std::string(std::uniform_int_distribution<size_t>(250, 260)(rng), 'n');
    case 1:
      return repeat("\\xfe", std::uniform_int_distribution<size_t>(60, 70)(rng));
    default:
      return choose(rng, pool);
  }
}

std::string randomPath(std::mt19937_64& rng) {
  if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
    const auto& v = hostilePaths();
    // Not the 1 MiB ones: the scripted calls send them (before the RSS baseline; glibc keeps
    // what a 1 MiB message made it take, which would hide a leak of the randomized calls).
    const Named& p = choose(rng, v);
    return p.value.size() > 8192 ? p.value.substr(0, 8192) : p.value;
  }
  std::string p = (rng() & 3) ? "/" : "";
  const int n = std::uniform_int_distribution<int>(0, 4)(rng);
  for (int i = 0; i < n; ++i) {
    if (i) p += (rng() % 8) ? "/" : "//";
    p += randomComponent(rng);
  }
  return p;
}

std::string randomCeiling(std::mt19937_64& rng) {
  if (rng() & 1) {
    const Named& c = choose(rng, ceilings());
    return c.value.size() > 8192 ? c.value.substr(0, 8192) : c.value;
  }
  static const std::vector<std::string> suffixes = {"",   "K",  "M",  "G", "T", "Ki", "Mi",
                                                    "Gi", "Ti", "KI", "i", "P", "k"};
  std::string digits;
  const int n = std::uniform_int_distribution<int>(0, 22)(rng);
  for (int i = 0; i < n; ++i) digits += static_cast<char>('0' + rng() % 10);
  return digits + choose(rng, suffixes);
}

std::string randomKey(std::mt19937_64& rng, const std::string& method) {
  auto rules = optionRules(method);
  static const std::vector<std::string> others = {"interactive",
                                                  "runtime",
                                                  "all",
                                                  "force",
                                                  "read_only",
                                                  "offset",
                                                  "size_limit",
                                                  "block_size",
                                                  "direct_io",
                                                  "autoclear",
                                                  "partscan",
                                                  "Interactive",
                                                  "",
                                                  "\x01",
                                                  "x",
                                                  "backend",
                                                  "workers",
                                                  "queue_depth",
                                                  "nbd_timeout",
                                                  "server_cgroup"};
  if (rng() % 3) return choose(rng, rules).key;
  return choose(rng, others);
}

}  // namespace

// As root, a call that would pass must change nothing of the test's world: a cgroup that does
// not exist, a LoopSetup with a bad block size, a device call without force.
void makeHarmless(Spec& s, Caller caller, const World& world) {
  if (caller != Caller::Root || !wouldChange(s, caller, world)) return;
  if (s.onLoop) {
    for (auto& o : s.options)
      if (o.key == "force") o = boolOption("force", false);
  } else if (s.method == "LoopSetup") {
    s.options.erase(std::remove_if(s.options.begin(), s.options.end(),
                                   [](const Option& o) { return o.key == "block_size"; }),
                    s.options.end());
    s.options.push_back(u32Option("block_size", 513));
  } else {
    s.text1 = "/no-such" + s.text1;
  }
}

Spec randomSpec(std::mt19937_64& rng, Caller caller, const World& world) {
  std::vector<std::string> all = managerMethods();
  all.insert(all.end(), loopMethods().begin(), loopMethods().end());
  Spec s = make(choose(rng, all), "random");
  const int shape = std::uniform_int_distribution<int>(0, 39)(rng);
  if (shape == 0) s.shape = Shape::MissingArg;
  if (shape == 1) s.shape = Shape::ExtraArg;
  if (shape == 2) s.shape = Shape::WrongType;
  if (shape == 3) s.shape = Shape::UnknownMethod;
  s.text1 = randomPath(rng);
  if (s.method == "SetBoostCeiling") s.text2 = randomCeiling(rng);
  if (s.method == "SetBoostPolicy") s.text2 = choose(rng, policies()).value.substr(0, 8192);
  s.flag = (rng() & 1) != 0;
  s.number = static_cast<uint32_t>(rng() & 1 ? (1u << (rng() % 32)) : rng());
  if ((s.method == "SetWorkers" || s.method == "SetQueueDepth") && rng() % 2) {
    static const std::vector<uint32_t> small = {0, 1, 2, 3, 4, 16, 17, 127, 128, 129};
    s.number = choose(rng, small);
  }
  s.fd = static_cast<FdKind>(rng() % kFdKinds);
  const int n = std::uniform_int_distribution<int>(0, 3)(rng);
  for (int i = 0; i < n; ++i) {
    std::string key = randomKey(rng, s.method);
    bool dup = false;
    for (const auto& o : s.options) dup = dup || o.key == key;
    if (dup) continue;
    std::string type;
    for (const auto& r : optionRules(s.method))
      if (key == r.key) type = r.type;
    if (type.empty() || rng() % 4 == 0) type = choose(rng, optionTypes());
    s.options.push_back(option(key, type, rng));
  }
  makeHarmless(s, caller, world);
  return s;
}

}  // namespace cxiosync::hostile
