#!/usr/bin/env python3
"""The CLOCK_BOOTTIME stamp (ts_ns) of every SNAP chunk of a platoon trace file, in file order,
decoded independently of the C++ reader (from docs/trace-format.md alone), so a test can read
the kernel's counters at the instants the recording took its snapshots.

usage: trace_snapshots.py FILE   → JSON: [ts_ns, ...]"""
import json, struct, subprocess, sys, zlib


def varint(buf, pos):
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def body_of(payload):
    if payload[0] == 0:
        return payload[1:]
    raw_len, p = varint(payload, 1)
    if payload[0] == 1:
        body = zlib.decompress(payload[p:])
    else:  # zstd: Python has no codec, the tool does
        body = subprocess.run(["zstd", "-d", "-c", "-q"], input=payload[p:], capture_output=True, check=True).stdout
    assert len(body) == raw_len
    return body


def main(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PLATOON", "not a platoon trace"
    pos, stamps = 16, []
    while pos + 12 <= len(data):
        ctype, length, crc = struct.unpack_from("<III", data, pos)
        payload = data[pos + 12 : pos + 12 + length]
        if len(payload) < length or zlib.crc32(payload, zlib.crc32(data[pos : pos + 8])) != crc:
            break  # an incomplete last chunk: stop there, like the reader
        pos += 12 + length
        if ctype.to_bytes(4, "little") == b"SNAP":
            stamps.append(varint(body_of(payload), 0)[0])
    json.dump(stamps, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
