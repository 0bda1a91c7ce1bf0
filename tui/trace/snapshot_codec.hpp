// The bodies of the META and SNAP chunks (docs/trace-format.md, "META" and "SNAP"), each
// encoder beside its decoder in snapshot_codec.cpp, so that a field added to one is added to
// the other on the same screen; the version knowledge (what minor 1 and minor 2 appended) lives
// there too. Chunk framing, compression and files are trace_writer.cpp's and trace_reader.cpp's.
#pragma once

#include <string>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/trace/byte_io.hpp"
#include "tui/trace/trace_reader.hpp"  // TraceContents: what the kKeep* caps cut

namespace platoon::trace {

void encode_meta(ByteWriter& w, const TraceMeta& m);
// False on a malformed body; trailing bytes are fields a newer minor version appended.
bool decode_meta(ByteReader& r, TraceMeta& m);

// False with *why when the snapshot has more threads or pairs than the format allows.
bool encode_snapshot(ByteWriter& w, const snapshot::Snapshot& s, std::string* why);
// False on a malformed body. Items past the kKeep* caps are read and dropped, and counted in out.
bool decode_snapshot(ByteReader& r, snapshot::Snapshot& s, TraceContents& out);

}  // namespace platoon::trace
