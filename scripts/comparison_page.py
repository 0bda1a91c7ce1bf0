#!/usr/bin/env python3
"""Writes comparison.html into a run-quick-comparison.sh output directory: the latency
percentile spectrum of every configuration on one log axis (platoon-load's own histograms,
load-results.json's latency_spectrum_us), CPU and context switches per request, the worst
%wait and max TPS per configuration, each with the commands that produced it. One
self-contained file: the chart library and the page's scripts are inlined, as in
`platoon report --format html`, from the build (BUILD/share/chart-lib.js) and tui/outputs/html/.

usage: scripts/comparison_page.py DIR [--build DIR] [--rate R]
"""
import argparse
import html
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSETS = os.path.join(ROOT, "tui", "outputs", "html")


def die(msg):
    sys.exit("comparison_page: " + msg)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def run_of(d):
    """One run directory's figures, or None when it did not finish."""
    summary = read_json(os.path.join(d, "summary.json"))
    if not summary:
        return None
    load = read_json(os.path.join(d, "load-results.json")) or {}
    ms = lambda spectrum: [[p, v / 1000.0] for p, v in spectrum or []]
    lat = summary.get("latency_us") or {}
    return {
        "command": read_text(os.path.join(d, "command.txt")),
        "requests": load.get("requests", summary.get("requests")),
        "rate": summary.get("rate"),
        "errors": summary.get("errors"),
        "latency_ms": {k: v / 1000.0 for k, v in lat.items() if isinstance(v, (int, float))},
        "spectrum_ms": ms(load.get("latency_spectrum_us")),
        "uncorrected_spectrum_ms": ms(load.get("uncorrected_latency_spectrum_us")),
        "cpus_utilized": summary.get("cpus_utilized"),
        "cpu_us_per_request": summary.get("cpu_us_per_request"),
        "context_switches_per_request": summary.get("context_switches_per_request"),
        "migrations_per_s": summary.get("migrations_per_s"),
        "max_wait_pct": max((t["wait_pct"] for t in summary.get("threads", [])), default=None),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rate")
    a = ap.parse_args()
    lib = os.path.join(a.build, "share", "chart-lib.js")
    if not os.path.exists(lib):
        die(f"{lib} is missing: build platoon first (make)")
    if not os.path.isdir(a.dir):
        die(f"{a.dir} is not a directory")
    # Configurations in the order they ran: when each first wrote its command.txt.
    runs = {}
    for d in os.listdir(a.dir):
        full = os.path.join(a.dir, d)
        if not (os.path.isdir(full) and (d.endswith("-rate") or d.endswith("-max"))):
            continue
        name, kind = d.rsplit("-", 1)
        cmd = os.path.join(full, "command.txt")
        started = os.path.getmtime(cmd) if os.path.exists(cmd) else float("inf")
        c = runs.setdefault(name, {"name": name, "first": started})
        c["first"] = min(c["first"], started)
        c["rate_run" if kind == "rate" else "max_run"] = run_of(full)
    if not runs:
        die(f"{a.dir} holds no NAME-rate or NAME-max run")
    configs = sorted(runs.values(), key=lambda c: (c["first"], c["name"]))
    # The fixed rate the runs were asked for: their command lines say it (--rate N).
    rate = a.rate
    for c in configs:
        cmd = (c.get("rate_run") or {}).get("command") or ""
        m = re.search(r"--rate (\d+)", cmd)
        if rate is None and m:
            rate = m.group(1)
    rate = rate or "?"
    data = {
        "title": "platoon benchmark comparison: " + os.path.basename(os.path.abspath(a.dir)),
        "dir": a.dir, "rate": rate,
        "command": read_text(os.path.join(a.dir, "command.txt")),
        "made_by": "scripts/comparison_page.py " + a.dir,
        "configs": [{k: v for k, v in c.items() if k != "first"} for c in configs],
    }
    page = open(os.path.join(ASSETS, "page.html")).read()
    script = "\n".join(open(os.path.join(ASSETS, f)).read() for f in ("charts.js", "comparison.js"))
    slots = {"{{TITLE}}": html.escape(data["title"]), "{{CSS}}": open(os.path.join(ASSETS, "report.css")).read(),
             "{{CHART_LIB}}": open(lib).read(), "{{DATA}}": json.dumps(data).replace("<", "\\u003c"),
             "{{APP}}": script}
    # One pass: a slot's text is never searched again for slots.
    text = re.sub(r"\{\{(TITLE|CSS|CHART_LIB|DATA|APP)\}\}", lambda m: slots[m.group(0)], page)
    path = os.path.join(a.dir, "comparison.html")
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    print(f"comparison_page: {path} ({len(configs)} configurations)", file=sys.stderr)


if __name__ == "__main__":
    main()
