#!/usr/bin/env python3
"""Reads /proc/stat's cpuN lines (and any other files named) every 10 ms until SIGTERM, so a test
can take the kernel's own counters at the instants a recording took its snapshots.

usage: proc_poll.py OUT [FILE...]
Each read is one JSON line in OUT: {"t0": ns, "t1": ns, "cpus": {"0": [user, nice, system, idle,
iowait, irq, softirq, steal], ...}, "files": {FILE: text}}, t0 and t1 being CLOCK_BOOTTIME (the
recording's clock) just before and just after the read. A file that cannot be read is left out.
A test imports load() and nearest() to find the read taken closest to an instant."""
import json, signal, sys, time


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def load(path):
    return [json.loads(line) for line in open(path) if line.endswith("\n")]


def nearest(reads, ts):
    """The read closest to CLOCK_BOOTTIME ts, and how far from ts its counters can be: the
    distance to the read's middle plus half the time the read took."""
    r = min(reads, key=lambda r: abs((r["t0"] + r["t1"]) // 2 - ts))
    return r, abs((r["t0"] + r["t1"]) // 2 - ts) + (r["t1"] - r["t0"]) // 2 + 1


def main(out_path, files):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(out_path, "w") as out:
        while not stop:
            t0 = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
            stat = read("/proc/stat") or ""
            texts = {p: t for p in files if (t := read(p)) is not None}
            t1 = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
            cpus = {}
            for line in stat.splitlines():
                f = line.split()
                if f and f[0].startswith("cpu") and f[0][3:].isdigit():
                    cpus[f[0][3:]] = list(map(int, f[1:9]))
            out.write(json.dumps({"t0": t0, "t1": t1, "cpus": cpus, "files": texts}) + "\n")
            out.flush()
            time.sleep(0.01)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
