#!/usr/bin/env python3
"""The CLOCK_BOOTTIME stamp (ts_ns) of every SNAP chunk of a platoon trace file, in file order,
decoded independently of the C++ reader (trace_chunks.py), so a test can read the kernel's
counters at the instants the recording took its snapshots.

usage: trace_snapshots.py FILE   → JSON: [ts_ns, ...]"""
import json, sys

from trace_chunks import chunks, varint

if __name__ == "__main__":
    json.dump([varint(body, 0)[0] for body in chunks(sys.argv[1], b"SNAP")], sys.stdout)
