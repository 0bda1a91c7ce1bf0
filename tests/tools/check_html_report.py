#!/usr/bin/env python3
"""Holds what an HTML report showed in Chromium (tests/tools/html_page.py's JSON) against
independent figures: `platoon top --replay FILE --batch` (another code path over the same
recording, read as text), the thread count /proc showed while recording, the load generator's
own counts and histogram and the mock's think time.

  check_html_report.py PAGE.json --top TOP.txt --report R.json --threads N
                       [--top-b TOP_B.txt --report-b R_B.json --threads-b N --verdict a|b]
                       [--load LOAD.json --think-us N] [--carriers N] [--procfs]

Line charts are read as drawn: each point's value is its position on the chart, the chart's
scales inverted (drawn_lines). Prints what it compared; exits 1 with one line per failed check.
"""
import argparse
import json
import re
import sys

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
    return cond


def parse_top(path):
    """Each interval's rows, in order: {tid: {"cpu": (value, text), "wait": (value, text),
    "cpus": {cpu: pct} or None when the cell may be cut}}."""
    blocks, cur, cols = [], None, None
    for line in open(path):
        if re.match(r"^platoon top\s+replay \d+/\d+", line):
            cur, cols = {}, None
            blocks.append(cur)
            continue
        if cur is None:
            continue
        if re.match(r"^\s+TID\s+NAME", line):
            cols = line.rstrip("\n")
            continue
        if cols is None:
            continue
        m = re.match(r"^\s*(\d+)\s+\S+\s+([\d.]+)\s+([\d.]+)\s", line)
        if not m:
            cols = None
            continue
        cpus = None
        at = cols.find("CPUS")
        if at >= 0:
            cell = line[at:at + 10].rstrip()
            tokens = re.findall(r"(?<!\S)(\d+):(\d+)(?!\S)", cell)
            # The cell is 9 wide and cut without a mark. With one-digit CPU ids two entries fit
            # ("0:67 1:33"); a full cell naming CPU 10 or above may have lost digits.
            if len(cell) < 9 or all(len(c) == 1 for c, _ in tokens):
                cpus = {int(c): float(p) for c, p in tokens}
        cur[int(m.group(1))] = {"cpu": (float(m.group(2)), m.group(2)), "wait": (float(m.group(3)), m.group(3)),
                                "cpus": cpus}
    return blocks


def tolerance(text):
    # top prints one decimal, none from 99.95 on.
    return 0.051 if "." in text else 0.51


def chart(page, cid):
    c = [c for c in page["charts"] if c["id"] == cid]
    return c[0] if c else None


def check_page_health(page, name, none_absent):
    check(page.get("ready"), f"{name}: the page never said it was ready: {page.get('error')}")
    check(not page.get("console"), f"{name}: console messages: {page.get('console', [])[:3]}")
    check(not page.get("requests"), f"{name}: the page made requests: {page.get('requests', [])[:3]}")
    check(not page.get("broken_links"), f"{name}: links to nothing: {page.get('broken_links', [])[:3]}")
    shot = page.get("screenshot")
    if check(shot, f"{name}: no screenshot"):
        check(shot["colours"] > 50 and shot["ink_pct"] > 1.0, f"{name}: the screenshot looks blank: {shot}")
    for c in page.get("charts", []):
        if c["absent"]:
            check(not none_absent, f"{name}: chart {c['id']} is absent from a BPF recording: {c['absent']}")
            check(len(c["absent"]) > 10, f"{name}: chart {c['id']} is absent without a reason")
            continue
        check(c["points"] > 0, f"{name}: chart {c['id']} has no points")
        check(c["drawn"] == c["points"], f"{name}: chart {c['id']} drew {c['drawn']} items for its {c['points']} points")
    print(f"{name}: ready in {page.get('ready_ms', 0):.0f} ms, {len(page.get('charts', []))} charts, "
          f"{sum(1 for c in page.get('charts', []) if c['absent'])} absent, screenshot {shot}")


def check_series_vs_top(page, top, nthreads, prefix, name):
    """%CPU and %wait as drawn, per thread and interval, equal top's at every interval."""
    want_series = min(nthreads, 24)
    for cid, col in (("cpu", "cpu"), ("wait", "wait")):
        c = chart(page, cid)
        if not check(c and not c["absent"], f"{name}: no {cid} chart"):
            continue
        drawn = [v for v in c["drawn_lines"] if v["s"].startswith(prefix)]
        by_series = {}
        for v in drawn:
            by_series.setdefault(v["s"], []).append(v)
        check(len(by_series) == want_series, f"{name}: {cid} drew {len(by_series)} series, /proc showed {nthreads} threads")
        compared = worst = 0
        for s, pts in by_series.items():
            tid = int(s.split()[-1])
            pts.sort(key=lambda v: v["x"])
            check(len(pts) == len(top), f"{name}: {cid} of tid {tid}: {len(pts)} points, top --replay {len(top)} intervals")
            for i, v in enumerate(pts[:len(top)]):
                row = top[i].get(tid)
                if not check(row is not None, f"{name}: {cid}: tid {tid} at interval {i + 1} is not in top's table"):
                    continue
                value, text = row[col]
                diff = abs(v["y"] - value)
                worst = max(worst, diff)
                compared += 1
                check(diff <= tolerance(text), f"{name}: {cid} of tid {tid} at interval {i + 1}: drawn {v['y']:.3f}, top {text}")
        for i, rows in enumerate(top):  # every thread top shows is drawn
            check(set(rows) <= {int(s.split()[-1]) for s in by_series},
                  f"{name}: {cid}: top's threads at interval {i + 1} ({sorted(rows)}) are not all drawn")
        check(compared == want_series * len(top), f"{name}: {cid}: {compared} values compared, not {want_series} × {len(top)}")
        print(f"{name}: {cid}: {compared} drawn values equal top --replay's (largest difference {worst:.3f})")


def check_placement(page, top, cid, name):
    c = chart(page, cid)
    if not check(c and not c["absent"], f"{name}: no placement chart {cid}"):
        return
    cells = {(v["tid"], v["cpu"], v["col"]): v["v"] for v in c["values"]}
    check(max(k[2] for k in cells) < len(top), f"{name}: placement has more intervals than top --replay")
    ran = {tid for rows in top for tid, r in rows.items() if r["cpus"]}
    check(c["series"] == min(len(ran), 24), f"{name}: placement has {c['series']} thread groups, top shows {len(ran)} threads on CPUs")
    compared = 0
    for i, rows in enumerate(top):
        for tid, r in rows.items():
            if not r["cpus"]:
                continue
            for cpu, pct in r["cpus"].items():  # what top lists is drawn, within top's rounding
                got = cells.get((tid, cpu, i))
                compared += 1
                check(got is not None and abs(got - pct) <= 0.51,
                      f"{name}: placement of {tid} on cpu {cpu} at interval {i + 1}: drawn {got}, top {pct}")
            # top lists a thread's two busiest CPUs: any other is no busier than the second.
            floor = min(r["cpus"].values()) if len(r["cpus"]) >= 2 else 0.0
            for (t, cpu, col), v in cells.items():
                if t == tid and col == i and cpu not in r["cpus"]:
                    check(v <= floor + 0.51, f"{name}: placement of {tid} on cpu {cpu} at interval {i + 1}: {v}, above top's listed CPUs")
    check(compared > 0, f"{name}: no placement cell compared")
    print(f"{name}: placement: {compared} cells equal top --replay's CPUS column (within its rounding)")


def check_requests(page, load, think_us, name):
    c = chart(page, "requests")
    if not check(c and not c["absent"], f"{name}: no requests chart"):
        return
    counts = c.get("counts") or {}
    server = {k: v for k, v in counts.items() if k.endswith("server time")}
    check(len(server) == 1, f"{name}: {len(server)} server endpoints: {list(counts)}")
    checked = 0
    for s, n in server.items():
        check(load["requests"] * 0.98 <= n <= load["requests"] + 200,
              f"{name}: {s}: {n} requests, platoon-load sent {load['requests']}")
        pts = sorted((v["x"], v["y"]) for v in c["drawn_lines"] if v["s"] == s)
        p50 = [y for x, y in pts if x >= 2 - 1e-9]
        if not check(p50, f"{name}: {s}: no point at or past the 50th percentile"):
            continue
        # The server time holds the backend's think time, and is part of what the client measured.
        client = load["uncorrected_latency_us"]["p50"]
        check(think_us <= p50[0] <= client * 1.1 + 50, f"{name}: {s}: p50 {p50[0]:.0f} µs outside [{think_us}, client p50 {client}]")
        checked += 1
        print(f"{name}: {s}: {n} requests (load sent {load['requests']}), p50 {p50[0]:.0f} µs within [think {think_us}, client {client}]")
    check(checked == 1, f"{name}: the server time p50 was not checked")


def check_batches(page, report, carriers, name):
    found = [t for t in report["threads"] if t["comm"].startswith("carrier") and (t.get("io") or {}).get("cycles", 0) > 0]
    check(len(found) == carriers, f"{name}: {len(found)} carriers with epoll returns, the server ran {carriers}")
    for t in found:
        cid = f"batches-{t['tid']}-epoll"
        c = chart(page, cid)
        if not check(c and not c["absent"], f"{name}: no {cid} heat map for {t['comm']}"):
            continue
        total = sum(v["v"] for v in c["values"])
        cycles = t["io"]["cycles"]
        # Every epoll return but the thread's first is a batch; the recording's edges are all the slack.
        check(cycles * 0.95 <= total <= cycles, f"{name}: {cid}: {total} batches, {cycles} epoll returns")
        print(f"{name}: {cid}: {total} batches for {cycles} epoll returns, {c['drawn']} cells drawn")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--name", default="page")
    ap.add_argument("--top", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--top-b")
    ap.add_argument("--report-b")
    ap.add_argument("--threads-b", type=int)
    ap.add_argument("--verdict")
    ap.add_argument("--load")
    ap.add_argument("--think-us", type=float, default=0)
    ap.add_argument("--carriers", type=int, default=0)
    ap.add_argument("--procfs", action="store_true")
    a = ap.parse_args()
    page = json.load(open(a.page))
    check_page_health(page, a.name, none_absent=not a.procfs)
    report = json.load(open(a.report))
    top = parse_top(a.top)
    check(len(top) >= 2, f"{a.name}: top --replay printed {len(top)} intervals")
    if a.verdict:
        check_series_vs_top(page, top, a.threads, "A · ", a.name + " A")
        top_b = parse_top(a.top_b)
        check_series_vs_top(page, top_b, a.threads_b, "B · ", a.name + " B")
        check_placement(page, top, "placement-A", a.name + " A")
        check_placement(page, top_b, "placement-B", a.name + " B")
        want = "Healthier: " + a.verdict.upper()
        check(want in page["text"], f"{a.name}: the page does not say '{want}'")
        print(f"{a.name}: the page says '{want}'")
    else:
        check_series_vs_top(page, top, a.threads, "", a.name)
    if a.procfs:
        for cid in ("placement", "runq", "batches", "requests"):
            c = chart(page, cid)
            check(c and c["absent"], f"{a.name}: {cid} is not absent from a procfs recording: {c}")
        for cid, word in (("placement", "procfs"), ("runq", "procfs"), ("batches", "procfs"), ("requests", "--requests")):
            c = chart(page, cid)
            check(c and word in (c["absent"] or ""), f"{a.name}: {cid}'s absence does not say why ({word})")
        check("cannot split the wait by cause" in page["text"], f"{a.name}: the wait causes' absence is not explained")
    elif not a.verdict:
        check_placement(page, top, "placement", a.name)
        if a.carriers:
            check_batches(page, report, a.carriers, a.name)
    if a.load:
        check_requests(page, json.load(open(a.load)), a.think_us, a.name)
    for f in failures:
        print("FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
