#!/usr/bin/env python3
"""Holds what an HTML report showed in Chromium (tests/tools/html_page.py's JSON) against
independent figures: `platoon top --replay FILE --batch` (another code path over the same
recording), the report's JSON, the load generator's own histogram and the mock's think time.

  check_html_report.py page PAGE.json --top TOP.txt [--top-b TOP_B.txt] --report R.json
                       [--load LOAD.json --think-us N] [--vs DOCTOR_VS.json] [--procfs] [--caps TEXT]

Prints what it compared; exits 1 with one line per failed check.
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
    """Each interval's rows: [{tid: (cpu, wait, {cpu: pct})}], in order."""
    blocks, cur, in_table = [], None, False
    for line in open(path):
        if re.match(r"^platoon top\s+replay \d+/\d+", line):
            cur = {}
            blocks.append(cur)
            in_table = False
            continue
        if cur is None:
            continue
        if re.match(r"^\s+TID\s+NAME", line):
            in_table = True
            continue
        if in_table:
            m = re.match(r"^\s*(\d+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+(.*)$", line)
            if not m:
                in_table = False
                continue
            dist = {int(c): float(p) for c, p in re.findall(r"\b(\d+):(\d+)\b", m.group(5))}
            cur[int(m.group(1))] = (float(m.group(3)), float(m.group(4)), dist)
    return blocks


def chart(page, cid):
    c = [c for c in page["charts"] if c["id"] == cid]
    return c[0] if c else None


def check_page_health(page, name):
    check(page.get("ready"), f"{name}: the page never said it was ready: {page.get('error')}")
    check(not page.get("console"), f"{name}: console messages: {page.get('console')[:3]}")
    check(not page.get("requests"), f"{name}: the page made requests: {page.get('requests')[:3]}")
    check(not page.get("broken_links"), f"{name}: links to nothing: {page.get('broken_links')[:3]}")
    shot = page.get("screenshot")
    if check(shot, f"{name}: no screenshot"):
        check(shot["colours"] > 50 and shot["ink_pct"] > 1.0, f"{name}: the screenshot looks blank: {shot}")
    for c in page["charts"]:
        if c["absent"]:
            check(len(c["absent"]) > 10, f"{name}: chart {c['id']} is absent without a reason")
            continue
        check(c["points"] > 0, f"{name}: chart {c['id']} has no points")
        check(c["drawn"] == c["points"], f"{name}: chart {c['id']} drew {c['drawn']} of its {c['points']} points")
    print(f"{name}: ready in {page.get('ready_ms', 0):.0f} ms, {len(page['charts'])} charts, "
          f"{sum(1 for c in page['charts'] if c['absent'])} absent, screenshot {shot}")


def check_series_vs_top(page, top, report, prefix, name, with_placement):
    """%CPU, %wait (and placement) per interval per thread equal top's at each interval."""
    threads = report["threads"]
    want_series = min(len(threads), 24)
    for cid, col in (("cpu", 0), ("wait", 1)):
        c = chart(page, cid)
        if not check(c and not c["absent"], f"{name}: no {cid} chart"):
            continue
        vals = [v for v in c["values"] if v["s"].startswith(prefix)]
        series = {v["s"] for v in vals}
        check(len(series) == want_series, f"{name}: {cid} has {len(series)} series for {len(threads)} threads")
        xs = sorted({v["x"] for v in vals})
        check(len(xs) == len(top), f"{name}: {cid} has {len(xs)} intervals, top --replay {len(top)}")
        compared = worst = 0
        for v in vals:
            tid = int(v["s"].split()[-1])
            i = xs.index(v["x"])
            row = top[i].get(tid) if i < len(top) else None
            if not check(row is not None, f"{name}: {cid}: tid {tid} at interval {i + 1} is not in top's table"):
                continue
            diff = abs(v["y"] - row[col])
            worst = max(worst, diff)
            compared += 1
            check(diff <= 0.051, f"{name}: {cid} of tid {tid} at interval {i + 1}: chart {v['y']}, top {row[col]}")
        check(compared >= len(top), f"{name}: {cid}: only {compared} values compared")
        print(f"{name}: {cid}: {compared} values equal top --replay's (largest difference {worst:.3f})")
    if not with_placement:
        return
    c = chart(page, "placement" if prefix == "" else "placement-" + prefix[0])
    if not check(c and not c["absent"], f"{name}: no placement chart"):
        return
    ran = [t for t in threads if t.get("cpu_distribution")]
    check(c["series"] == min(len(ran), 24), f"{name}: placement has {c['series']} thread groups, {len(ran)} threads ran")
    cols = []
    for v in c["values"]:
        if v["col"] not in cols:
            cols.append(v["col"])
    compared = 0
    for v in c["values"]:
        m = re.match(r"^.* (\d+) · cpu (\d+)$", v["row"])
        tid, cpu = int(m.group(1)), int(m.group(2))
        i = sorted(cols, key=float).index(v["col"])
        top_pct = top[i].get(tid, (0, 0, {}))[2].get(cpu, 0.0)
        compared += 1
        check(abs(v["v"] - top_pct) <= 1.0, f"{name}: placement of {tid} on cpu {cpu} at interval {i + 1}: chart {v['v']:.1f}, top {top_pct}")
    print(f"{name}: placement: {compared} cells equal top --replay's CPUS column (within its rounding)")


def check_requests(page, load, think_us, name):
    c = chart(page, "requests")
    if not check(c and not c["absent"], f"{name}: no requests chart"):
        return
    counts = c.get("counts") or {}
    server = {k: v for k, v in counts.items() if "server time" in k}
    check(len(server) == 1, f"{name}: {len(server)} server endpoints: {list(counts)}")
    for k, n in server.items():
        check(load["requests"] * 0.98 <= n <= load["requests"] + 200,
              f"{name}: {k}: {n} requests, platoon-load sent {load['requests']}")
    by_series = {}
    for v in c["values"]:
        by_series.setdefault(v["s"], []).append((v["x"], v["y"]))
    for s, pts in by_series.items():
        if "server time" not in s:
            continue
        pts.sort()
        p50 = [y for x, y in pts if x >= 2][0]
        # The server time holds the backend's think time, and is part of what the client measured.
        check(think_us <= p50 <= load["uncorrected_latency_us"]["p50"] * 1.1 + 50,
              f"{name}: {s}: p50 {p50} µs outside [{think_us}, client p50 {load['uncorrected_latency_us']['p50']}]")
        print(f"{name}: {s}: {server.get(s, 0)} requests, p50 {p50} µs within [think {think_us}, client {load['uncorrected_latency_us']['p50']}]")


def check_batches(page, report, prefix, name):
    carriers = [t for t in report["threads"] if t["comm"].startswith("carrier") and t.get("io")]
    for t in carriers:
        cid = "batches-" + prefix + str(t["tid"]) + "-epoll"
        c = chart(page, cid)
        if not check(c and not c["absent"], f"{name}: no {cid} heat map for {t['comm']}"):
            continue
        total = sum(v["v"] for v in c["values"])
        cycles = t["io"]["cycles"]
        # Every epoll return after the thread's first is one batch; returns the recording cut at
        # its start and end are all the slack there is.
        check(cycles * 0.95 <= total <= cycles + 2, f"{name}: {cid}: {total} batches, {cycles} epoll returns")
        print(f"{name}: {cid}: {total} batches for {cycles} epoll returns")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--name", default="page")
    ap.add_argument("--top", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--top-b")
    ap.add_argument("--report-b")
    ap.add_argument("--vs")
    ap.add_argument("--load")
    ap.add_argument("--think-us", type=float, default=0)
    ap.add_argument("--procfs", action="store_true")
    ap.add_argument("--caps")
    a = ap.parse_args()
    page = json.load(open(a.page))
    check_page_health(page, a.name)
    report = json.load(open(a.report))
    top = parse_top(a.top)
    check(len(top) >= 2, f"{a.name}: top --replay printed {len(top)} intervals")
    if a.vs:
        check_series_vs_top(page, top, report, "A · ", a.name + " A", True)
        check_series_vs_top(page, parse_top(a.top_b), json.load(open(a.report_b)), "B · ", a.name + " B", True)
        verdict = json.load(open(a.vs))["healthier"]
        text = page["text"]
        want = "Healthier: " + verdict.upper() if verdict in ("a", "b") else "Neither is clearly healthier"
        check(want in text, f"{a.name}: the page does not say '{want}' as doctor --vs does")
        print(f"{a.name}: verdict '{want}' as doctor --vs says")
    else:
        check_series_vs_top(page, top, report, "", a.name, not a.procfs)
    if a.procfs:
        for cid, word in (("placement", "procfs"), ("batches", "procfs"), ("requests", "--requests")):
            c = chart(page, cid)
            check(c and c["absent"] and word in c["absent"], f"{a.name}: {cid} is not absent with a reason: {c}")
        check("procfs" in page["text"] and "run-queue latency" in page["text"], f"{a.name}: the run-queue chart's absence is not explained")
    elif not a.vs:
        check_batches(page, report, "", a.name)
    if a.load:
        check_requests(page, json.load(open(a.load)), a.think_us, a.name)
    if a.caps:
        check(a.caps in page["text"], f"{a.name}: the page does not note '{a.caps}'")
    for f in failures:
        print("FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
