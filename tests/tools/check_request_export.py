#!/usr/bin/env python3
"""Checks `platoon export -f requests-csv` and the requests in `-f perfetto` against the request
records of the trace, decoded here independently of the C++ reader (trace_events.py), with the
rules of docs/export.md written out again in Python.

usage: check_request_export.py TRACE CSV SLICES_JSON [--comms REPORT_JSON] [--report REPORT_JSON [--exact]]
  SLICES_JSON: perfetto_slices.py's reading of the decoded .pftrace.
  --comms: the reader names to expect in the CSV, from `platoon report -f json`'s threads.
  --report: compare the counts with the report's requests block: the export has every request of
    the file, the report those of its window (first to last snapshot), so the report may count
    fewer; --exact: none happened before the first snapshot, so the counts are equal.
Prints the figures and exits non-zero on the first disagreement."""
import argparse, csv, json, sys
from collections import Counter, defaultdict

from trace_events import request_records

PARTIAL, UNATTRIBUTED, OVERLAPPED = 1, 2, 4
STATES = ("runnable", "throttled", "running", "blocked")


def remote(r):
    host = f"[{r['remote_ip']}]" if r["family"] == 10 else r["remote_ip"]
    return f"{host}:{r['remote_port']}"


def measured(r):
    """The measured fields of a request: name -> value, None where the record does not measure it."""
    server, partial = r["side"] == 0, bool(r["flags"] & PARTIAL)
    split = not partial and not r["flags"] & UNATTRIBUTED
    m = {"socket_wait_ns": None if partial else r["wait"],
         "service_ns": r["service"] if server else None,
         "backend_time_ns": None if server else r["service"],
         "server_time_ns": r["wait"] + r["service"] if server and not partial else None}
    for i, s in enumerate(STATES):
        m[f"{s}_ns"] = r["state"][i] if split else None
    for name, bit in (("partial", PARTIAL), ("unattributed", UNATTRIBUTED), ("overlapped", OVERLAPPED)):
        m[name] = 1 if r["flags"] & bit else 0
    return m


def start(r):
    return r["ts"] - r["wait"] - r["service"]


def expected_row(r, comms):
    row = {"end_ns": r["ts"], "start_ns": start(r), "side": "server" if r["side"] == 0 else "client",
           "pid": r["pid"], "tid": r["tid"], "comm": comms.get(r["tid"], "") if comms is not None else None,
           "conn": r["conn"], "local_port": r["local_port"], "remote": remote(r)}
    row.update(measured(r))
    return {k: v if k == "comm" else ("" if v is None else str(v)) for k, v in row.items()}  # comm None: unchecked


def check_csv(recs, path, comms):
    rows = list(csv.DictReader(open(path, newline="")))
    assert len(rows) == len(recs), f"{len(rows)} rows for {len(recs)} requests"
    want = [expected_row(r, comms) for r in sorted(recs, key=lambda r: r["ts"])]  # stable: file order on ties
    for i, (got, w) in enumerate(zip(rows, want)):
        assert list(got) == list(w), f"columns {list(got)} != {list(w)}"
        for k, v in w.items():
            assert v is None or got[k] == v, f"row {i + 1} {k}: {got[k]!r}, the record says {v!r}"
    print(f"csv: {len(rows)} rows equal the {len(recs)} records field by field, in time order")


def phases(r):
    s, w, b = start(r), r["wait"], r["service"]
    if r["flags"] & PARTIAL:
        return []
    if r["side"] == 0:
        return [("socket wait", s, w), ("service", s + w, b)]
    return [("backend", s, b), ("socket wait", s + b, w)]


def check_perfetto(recs, path):
    d = json.load(open(path))
    assert not d["errors"], d["errors"][:5]
    tracks, slices = d["tracks"], d["slices"]
    children = defaultdict(list)
    for i, s in enumerate(slices):
        if s["parent"] is not None:
            children[s["parent"]].append(i)
    flow_to = {a: b for a, b in d["flows"]}
    by_key = defaultdict(list)
    for i, s in enumerate(slices):
        if s["depth"] == 0 and s["name"] in ("request", "request (partial)"):
            by_key[(tracks[s["track"]]["name"], s["ts"], s["dur"], s["name"])].append(i)
    n_slices = sum(len(v) for v in by_key.values())
    assert n_slices == len(recs), f"{n_slices} request slices for {len(recs)} requests"

    def process_of(track):  # a connection's track, or an overlap track under it, under the process
        t = tracks[track]
        while "process" not in t:
            t = tracks[t["parent"]]
        return t["process"]["pid"]

    for r in recs:
        local = f":{r['local_port']}"
        name = f"server {local} <- {remote(r)}" if r["side"] == 0 else f"client {local} -> {remote(r)}"
        partial = bool(r["flags"] & PARTIAL)
        key = (name, start(r), r["wait"] + r["service"], "request (partial)" if partial else "request")
        assert by_key.get(key), f"no slice {key} for the request on conn {r['conn']} ending at {r['ts']}"
        i = by_key[key].pop()
        s = slices[i]
        assert process_of(s["track"]) == r["pid"], f"track {name} not under process {r['pid']}"
        want_args = {k: (bool(v) if k in ("partial", "unattributed", "overlapped") else v)
                     for k, v in measured(r).items() if v is not None}
        assert s["args"] == want_args, f"{key}: arguments {s['args']} != {want_args}"
        got = [(slices[c]["name"], slices[c]["ts"], slices[c]["dur"]) for c in children[i]]
        assert got == phases(r), f"{key}: phases {got} != {phases(r)}"
        for c in children[i]:
            if slices[c]["name"] != "socket wait":
                assert c not in flow_to, f"{key}: a flow from {slices[c]['name']}"
                continue
            assert c in flow_to, f"{key}: no flow from its socket wait"
            to = slices[flow_to[c]]
            read = start(r) + r["wait"] if r["side"] == 0 else r["ts"]
            assert tracks[to["track"]].get("thread", {}).get("tid") == r["tid"], f"{key}: flow lands off reader {r['tid']}"
            assert (to["ts"], to["dur"]) == (read, 0), f"{key}: flow lands at {to['ts']}, the read was at {read}"
    complete = sum(1 for r in recs if not r["flags"] & PARTIAL)
    assert len(d["flows"]) == complete, f"{len(d['flows'])} flows for {complete} complete requests"
    conns = {r["conn"] for r in recs}
    lanes = Counter(t["name"] for t in tracks.values() if (t.get("name") or "").startswith(("server :", "client :")))
    print(f"perfetto: {n_slices} request slices ({n_slices - complete} partial) on {len(conns)} connections "
          f"({sum(lanes.values())} tracks), phases as recorded, {len(d['flows'])} flows to the readers at their reads")


def check_report(recs, path, exact):
    rq = json.load(open(path))["requests"]
    mine = Counter(("server" if r["side"] == 0 else "client", "partial" if r["flags"] & PARTIAL else "count")
                   for r in recs)
    theirs = Counter()
    for side in ("server", "client"):
        for row in rq[side]:
            for k in ("count", "partial"):
                theirs[(side, k)] += row.get(k, 0)
    print(f"report window: server {theirs[('server', 'count')]} + {theirs[('server', 'partial')]} partial, "
          f"client {theirs[('client', 'count')]} + {theirs[('client', 'partial')]} partial; "
          f"export: server {mine[('server', 'count')]} + {mine[('server', 'partial')]} partial, "
          f"client {mine[('client', 'count')]} + {mine[('client', 'partial')]} partial")
    for k in set(mine) | set(theirs):
        assert (mine[k] == theirs[k]) if exact else (mine[k] >= theirs[k]), f"{k}: export {mine[k]}, report {theirs[k]}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace"), ap.add_argument("csv"), ap.add_argument("slices")
    ap.add_argument("--comms"), ap.add_argument("--report"), ap.add_argument("--exact", action="store_true")
    a = ap.parse_args()
    recs = request_records(a.trace)
    assert recs, "the trace holds no request records"
    comms = {t["tid"]: t["comm"] for t in json.load(open(a.comms))["threads"]} if a.comms else None
    check_csv(recs, a.csv, comms)
    check_perfetto(recs, a.slices)
    if a.report:
        check_report(recs, a.report, a.exact)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
