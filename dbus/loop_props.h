// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
// The org.cxiosync1.Loop properties, in ONE table: each row names the property (as in
// org.cxiosync1.xml), the field of the device model (LoopInfo = policy/blockdev/block_device.h)
// it shows, and the key of cxiosyncctl's JSON record. The table drives the D-Bus getters
// (LoopObject in loop_server.cpp), the property dict both ways (toWire / loopFromWire in
// loop_wire.cpp) and the CLI's columns (ctl/loop_cli.cpp); a unit test checks it against the
// IDL (tests/unit/ctl/loop_props_test.cpp). Adding a property: a row here, the <property> in
// the IDL, and the backend code that fills the field.
//
// The wire type follows from the field's type: std::string -> s (through wire::text: names are
// bytes), uint64_t -> t, uint32_t -> u, bool -> b, BackendKind and optional<DirectIoMode> -> s
// (their names; "" for none).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

#include "dbus/loop_backend.h"

// X(Property, field, "json_key"), in the IDL's order.
#define CXIOSYNC_LOOP_PROPERTIES(X)                                 \
  X(Device, device, "device")                                       \
  X(BackingFile, backingFile, "backing_file")                       \
  X(Offset, offset, "offset")                                       \
  X(SizeLimit, sizeLimit, "size_limit")                             \
  X(Size, sizeBytes, "size")                                        \
  X(ReadOnly, readOnly, "read_only")                                \
  X(Autoclear, autoclear, "autoclear")                              \
  X(PartScan, partscan, "partscan")                                 \
  X(DirectIO, directIo, "direct_io")                                \
  X(DirectIOMode, directIoMode, "direct_io_mode")                   \
  X(DirectIONote, directIoNote, "direct_io_note")                   \
  X(BlockSize, blockSize, "block_size")                             \
  X(BlockSizeSource, blockSizeSource, "block_size_source")          \
  X(SetupByUid, setupByUid, "setup_by_uid")                         \
  X(SetupRealtimeUsec, setupRealtimeUsec, "setup_realtime_usec")    \
  X(Foreign, foreign, "foreign")                                    \
  X(ForeignOwner, foreignOwner, "foreign_owner")                    \
  X(BackingDevice, backingDevice, "backing_device")                 \
  X(BackingDisk, backingDisk, "backing_disk")                       \
  X(RequestDepth, requestDepth, "request_depth")                    \
  X(Backend, backend, "backend")                                    \
  X(Workers, workers, "workers")                                    \
  X(QueueDepth, queueDepth, "queue_depth")                          \
  X(WorkersSettable, workersSettable, "workers_settable")           \
  X(QueueDepthSettable, queueDepthSettable, "queue_depth_settable") \
  X(ServerCgroup, serverCgroup, "server_cgroup")

namespace cxiosync::dbus::wire {

// A field's value on the wire, and back (false: the variant has another type).
std::string wireValue(const std::string& v);
inline uint64_t wireValue(uint64_t v) {
  return v;
}
inline uint32_t wireValue(uint32_t v) {
  return v;
}
inline bool wireValue(bool v) {
  return v;
}
std::string wireValue(BackendKind v);
std::string wireValue(const std::optional<DirectIoMode>& v);

bool fromWireValue(const sdbus::Variant& v, std::string& out);
bool fromWireValue(const sdbus::Variant& v, uint64_t& out);
bool fromWireValue(const sdbus::Variant& v, uint32_t& out);
bool fromWireValue(const sdbus::Variant& v, bool& out);
bool fromWireValue(const sdbus::Variant& v, BackendKind& out);
bool fromWireValue(const sdbus::Variant& v, std::optional<DirectIoMode>& out);

struct LoopProperty {
  const char* name;       // "BackingFile"
  std::string signature;  // "s"
  const char* jsonKey;    // "backing_file"
  sdbus::Variant (*get)(const LoopInfo& d);
  bool (*set)(LoopInfo& d, const sdbus::Variant& v);
};
const std::vector<LoopProperty>& loopProperties();  // the table's rows, in order

}  // namespace cxiosync::dbus::wire
