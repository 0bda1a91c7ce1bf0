"""The chunks of a platoon trace file, decoded independently of the C++ reader (from
docs/trace-format.md alone): the second reader the trace tools (trace_events.py,
trace_snapshots.py) build on. Not a program: they import it."""
import struct, subprocess, zlib


def varint(buf, pos):
    """The LEB128 value at buf[pos] and the position after it."""
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def body_of(payload):
    """A chunk's body: stored (0), zlib (1, the 1.x files) or zstd (2; Python has no codec, the
    zstd tool does)."""
    if payload[0] == 0:
        return payload[1:]
    raw_len, p = varint(payload, 1)
    if payload[0] == 1:
        body = zlib.decompress(payload[p:])
    else:
        body = subprocess.run(["zstd", "-d", "-c", "-q"], input=payload[p:], capture_output=True, check=True).stdout
    assert len(body) == raw_len
    return body


def chunks(path, kind):
    """The decoded bodies of the chunks of type KIND (b"SNAP", b"EVTS", ...) in file order. A crash
    leaves an incomplete last chunk: it stops there, like the reader."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PLATOON", "not a platoon trace"
    pos = 16
    while pos + 12 <= len(data):
        ctype, length, crc = struct.unpack_from("<III", data, pos)
        payload = data[pos + 12 : pos + 12 + length]
        if len(payload) < length or zlib.crc32(payload, zlib.crc32(data[pos : pos + 8])) != crc:
            return
        pos += 12 + length
        if ctype.to_bytes(4, "little") == kind:
            yield body_of(payload)
