// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// One hostile call: what is sent (a Spec), what the documentation says must come back
// (expected()), and how it is sent (send()).
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

namespace cxiosync::hostile {

// The kinds of backing fd a caller can pass to LoopSetup.
enum class FdKind {
  DevNull,    // /dev/null, read-only
  PipeRead,   // a pipe's read end
  PipeWrite,  // a pipe's write end (write-only)
  Socket,     // one end of a socketpair
  OPath,      // O_PATH on a regular file
  WriteOnly,  // a regular file opened O_WRONLY
  Directory,  // O_RDONLY|O_DIRECTORY
  ReadOnly,   // a regular file, O_RDONLY
  ReadWrite,  // a regular file, O_RDWR
  EventFd,    // eventfd(2)
  MemFd,      // memfd_create(2): a regular file on shmem
};
inline constexpr int kFdKinds = 11;
const char* fdKindName(FdKind k);
// Opens one fd of each kind for the current uid (files below `dir`); -1 where it failed.
std::vector<int> openFds(const std::string& dir);

// An a{sv} entry: the key, the D-Bus type of the value, and the value (also as plain C++ for
// the model: b, the integer, the string).
struct Option {
  std::string key;
  std::string type;
  sdbus::Variant value;
  bool b = false;
  uint64_t n = 0;
  std::string s;
  // The client library refused to build the value (a string that is not UTF-8: sdbus-c++
  // serializes a Variant when it is made); send() reports the call as refused by the client.
  bool unsendable = false;
};

enum class Shape { Normal, MissingArg, ExtraArg, WrongType, UnknownMethod };

struct Spec {
  std::string method;        // Manager or Loop method name
  bool onLoop = false;       // org.cxiosync1.Loop on the device object
  std::string text1, text2;  // cgroup path; policy or ceiling
  bool flag = false;         // SetIsolation/SetDirectIO/SetAutoclear's boolean
  uint32_t number = 0;       // SetBlockSize
  FdKind fd = FdKind::DevNull;
  std::vector<Option> options;
  Shape shape = Shape::Normal;
  std::string label;  // what is hostile about it (scripted calls)
};

enum class Caller { Root, Other };

// The bytes of the call's strings (what a large message costs the bus to carry).
size_t payloadBytes(const Spec& spec);

// What the daemon and the bus must answer, from the documentation. `loopObject`: the device
// object exists (a foreign device); `loopBackend`: the daemon has loop support.
struct World {
  std::string cgroupRoot;
  bool loopObject = false;
  bool loopBackend = false;
  uint32_t hwQueueDepth = 128;  // the loop module's hw_queue_depth: SetQueueDepth's bound
};
std::string expected(const Spec& spec, Caller caller, const World& world);
// Whether the call, if it passed, would change something (the generators avoid that as root).
bool wouldChange(const Spec& spec, Caller caller, const World& world);

// Sends it and returns the error name ("" success), or "client-refused" when the client
// library refuses to build the message. `took`: from the message built to its answer.
std::string send(sdbus::IProxy& proxy, const Spec& spec, const std::vector<int>& fds,
                 std::chrono::microseconds timeout, std::chrono::microseconds* took);

// Option values of every D-Bus type the generators use. A string is sent as a C string
// (sd_bus_message_append_basic): what follows a NUL never reaches the wire, so `s` holds
// what the daemon receives.
Option option(const std::string& key, const std::string& type, std::mt19937_64& rng);
Option boolOption(const std::string& key, bool v);
Option u64Option(const std::string& key, uint64_t v);
Option u32Option(const std::string& key, uint32_t v);
Option stringOption(const std::string& key, const std::string& v);
// Every type signature option() can make.
const std::vector<std::string>& optionTypes();

// The hand-written cases (>= 100) and the seeded generator.
std::vector<Spec> scripted(Caller caller);
// As root, turns a call that would pass into one that changes nothing (never for reads).
void makeHarmless(Spec& spec, Caller caller, const World& world);
Spec randomSpec(std::mt19937_64& rng, Caller caller, const World& world);

// Manager methods and Loop methods (dbus/org.cxiosync1.xml).
const std::vector<std::string>& managerMethods();
const std::vector<std::string>& loopMethods();

}  // namespace cxiosync::hostile
