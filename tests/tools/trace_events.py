#!/usr/bin/env python3
"""Counts the raw events of a platoon trace file, decoded independently of the C++ reader
(trace_chunks.py), so tests can check what an exporter wrote against it.

usage: trace_events.py FILE   → JSON: {"by_cpu": {"0": {"1": n, ...}}, "by_tid": {"tid": {"7": n}},
                                       "epoll_ok_by_tid": {...}, "drain_by_tid": {...}}
Event types (bpf/platoon.h): 1 switch, 2 waking, 3 wakeup, 4 wakeup_new, 5 migrate, 6 exit,
7 epoll, 8 drain, 9 steal."""
import json, struct, sys

from trace_chunks import chunks, varint

SIZES = {1: 72, 2: 48, 3: 48, 4: 48, 5: 48, 6: 24, 7: 32, 8: 40, 9: 40}


def main(path):
    by_cpu, by_tid, epoll_ok, drains = {}, {}, {}, {}
    for body in chunks(path, b"EVTS"):
        count, p = varint(body, 0)
        for _ in range(count):
            ts, etype, cpu, tid = struct.unpack_from("<QHHI", body, p)
            size = SIZES[etype]
            c = by_cpu.setdefault(str(cpu), {})
            c[str(etype)] = c.get(str(etype), 0) + 1
            t = by_tid.setdefault(str(tid), {})
            t[str(etype)] = t.get(str(etype), 0) + 1
            if etype == 7 and struct.unpack_from("<i", body, p + 16)[0] >= 0:
                epoll_ok[str(tid)] = epoll_ok.get(str(tid), 0) + 1
            if etype == 8:
                drains[str(tid)] = drains.get(str(tid), 0) + 1
            p += size
        assert p == len(body), "records do not fill the chunk"
    json.dump({"by_cpu": by_cpu, "by_tid": by_tid, "epoll_ok_by_tid": epoll_ok, "drain_by_tid": drains},
              sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
