// The SNAP chunk's request tail (format 3.0; docs/trace-format.md, "SNAP"): the snapshot's
// request groups and lost_requests, after the minor-2 tail. A body that ends before it is a file
// older than 3.0, whose snapshots have no requests.
#pragma once

#include "bpf/snapshot/snapshot.hpp"
#include "tui/trace/byte_io.hpp"

namespace platoon::trace {

void encode_request_tail(ByteWriter& w, const snapshot::Snapshot& s);
// False on a malformed tail; groups beyond kKeepRequestGroups are read and dropped.
bool decode_request_tail(ByteReader& r, snapshot::Snapshot& s);

}  // namespace platoon::trace
