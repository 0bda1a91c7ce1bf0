#!/usr/bin/env python3
"""Turns one run-benchmark.sh output directory into summary.json: the load's figures, the
server's CPU per request, context switches per request, migrations per second and per-thread
%CPU / %wait over the measured window (from /proc snapshots at its start and end)."""
import json
import os
import sys

out, window = sys.argv[1], float(sys.argv[2])
ticks = os.sysconf("SC_CLK_TCK")


def snap(name):
    rows = {}
    with open(os.path.join(out, name)) as f:
        for line in f:
            p = line.split()
            if len(p) < 10:
                continue
            rows[p[1]] = {"pid": int(p[0]), "comm": p[2], "cpu_ticks": int(p[3]) + int(p[4]),
                          "run_ns": int(p[5]), "wait_ns": int(p[6]), "vcsw": int(p[7]),
                          "nvcsw": int(p[8]), "migrations": int(p[9])}
    return rows


begin, end = snap(".snap-begin"), snap(".snap-end")
threads = []
tot = {"run_ns": 0, "vcsw": 0, "nvcsw": 0, "migrations": 0}
for tid, e in end.items():
    b = begin.get(tid)
    if not b:
        continue
    d = {k: e[k] - b[k] for k in ("run_ns", "wait_ns", "vcsw", "nvcsw", "migrations")}
    for k in tot:
        tot[k] += d[k]
    threads.append({"tid": int(tid), "comm": e["comm"],
                    "cpu_pct": round(100.0 * d["run_ns"] / (window * 1e9), 1),
                    "wait_pct": round(100.0 * d["wait_ns"] / (window * 1e9), 1),
                    "cswch_per_s": round(d["vcsw"] / window, 1),
                    "nvcswch_per_s": round(d["nvcsw"] / window, 1),
                    "migrations_per_s": round(d["migrations"] / window, 1)})

load = {}
try:
    with open(os.path.join(out, "load-results.json")) as f:
        load = json.load(f)
except (OSError, ValueError):
    pass
requests = load.get("requests", 0)
# The window of the /proc snapshots and the load's measured part are the same length; use the
# load's achieved rate to count requests in the window.
req_in_window = load.get("rate", 0) * window or requests
summary = {
    "requests": requests,
    "errors": load.get("errors"),
    "rate": load.get("rate"),
    "latency_us": load.get("latency_us"),
    "uncorrected_latency_us": load.get("uncorrected_latency_us"),
    "server_cpu_s": round(tot["run_ns"] / 1e9, 3),
    "cpus_utilized": round(tot["run_ns"] / 1e9 / window, 3),
    "cpu_us_per_request": round(tot["run_ns"] / 1e3 / req_in_window, 2) if req_in_window else None,
    "context_switches_per_request": round((tot["vcsw"] + tot["nvcsw"]) / req_in_window, 4) if req_in_window else None,
    "context_switches_per_s": round((tot["vcsw"] + tot["nvcsw"]) / window, 1),
    "migrations_per_s": round(tot["migrations"] / window, 1),
    "threads": sorted(threads, key=lambda t: -t["cpu_pct"]),
}
print(json.dumps(summary, indent=2))
