#!/usr/bin/env python3
"""Counts the raw events of a platoon trace file, decoded independently of the C++ reader
(trace_chunks.py), so tests can check what an exporter wrote against it.

usage: trace_events.py FILE   → JSON: {"by_cpu": {"0": {"1": n, ...}}, "by_tid": {"tid": {"7": n}},
                                       "epoll_ok_by_tid": {...}, "drain_by_tid": {...}}
Event types (bpf/platoon.h): 1 switch, 2 waking, 3 wakeup, 4 wakeup_new, 5 migrate, 6 exit,
7 epoll, 8 drain, 9 steal, 10 request. request_records(FILE) decodes the requests."""
import ipaddress, json, struct, sys

from trace_chunks import chunks, varint

SIZES = {1: 72, 2: 48, 3: 48, 4: 48, 5: 48, 6: 24, 7: 32, 8: 40, 9: 40, 10: 104}
AF_INET6 = 10


def records(path):
    """(type, record bytes) of every event record, in file order."""
    for body in chunks(path, b"EVTS"):
        count, p = varint(body, 0)
        for _ in range(count):
            etype = struct.unpack_from("<H", body, p + 8)[0]
            yield etype, body[p : p + SIZES[etype]]
            p += SIZES[etype]
        assert p == len(body), "records do not fill the chunk"


def request_records(path):
    """The request records (struct platoon_ev_request, docs/trace-format.md) in file order, as dicts."""
    out = []
    for etype, rec in records(path):
        if etype != 10:
            continue
        ts, _, cpu, tid, pid, side, flags, family, lport, rport, _ = struct.unpack_from("<QHHIIHHHHHH", rec, 0)
        addr = rec[32:48]
        ip = ipaddress.IPv6Address(addr) if family == AF_INET6 else ipaddress.IPv4Address(addr[:4])
        conn, wait, service = struct.unpack_from("<QQQ", rec, 48)
        out.append({"ts": ts, "cpu": cpu, "tid": tid, "pid": pid, "side": side, "flags": flags,
                    "family": family, "local_port": lport, "remote_port": rport, "remote_ip": str(ip),
                    "conn": conn, "wait": wait, "service": service,
                    "state": list(struct.unpack_from("<4Q", rec, 72))})
    return out


def main(path):
    by_cpu, by_tid, epoll_ok, drains = {}, {}, {}, {}
    for etype, rec in records(path):
        ts, _, cpu, tid = struct.unpack_from("<QHHI", rec, 0)
        c = by_cpu.setdefault(str(cpu), {})
        c[str(etype)] = c.get(str(etype), 0) + 1
        t = by_tid.setdefault(str(tid), {})
        t[str(etype)] = t.get(str(etype), 0) + 1
        if etype == 7 and struct.unpack_from("<i", rec, 16)[0] >= 0:
            epoll_ok[str(tid)] = epoll_ok.get(str(tid), 0) + 1
        if etype == 8:
            drains[str(tid)] = drains.get(str(tid), 0) + 1
    json.dump({"by_cpu": by_cpu, "by_tid": by_tid, "epoll_ok_by_tid": epoll_ok, "drain_by_tid": drains},
              sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
