#!/usr/bin/env bash
# scripts/run-quick-comparison.sh writes comparison.html beside its table, and the page shows
# what the runs measured: opened in headless Chromium with the network cut (as
# tests/bpf/report_html_test.sh opens reports), no console message or request, and each chart
# holds the runs' own figures: one latency spectrum per configuration equal to platoon-load's
# histogram (load-results.json's latency_spectrum_us), CPU and context switches per request and
# max TPS equal to each run's summary.json, and the commands that made them.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp comparison
require_root "to pin the benchmark's processes"
py=/usr/bin/python3
for c in /usr/bin/chromium /usr/bin/chromedriver unshare; do require_cmd "$c" "needs $c (scripts/install-deps.sh)"; done
"$py" -c 'import selenium, PIL' 2> /dev/null || skip "needs python3-selenium and python3-pil (scripts/install-deps.sh)"
export HTML_PAGE_PROFILE=$tmp/profile

out=$tmp/cmp
timeout -k 5 120 scripts/run-quick-comparison.sh --only baseline,pinned --duration 1 --warmup 1 --rate 1000 \
  --connections 20 --output-dir "$out" --build "$BUILD" > "$tmp/cmp.log" 2>&1 || { tail -20 "$tmp/cmp.log"; fail "run-quick-comparison"; }
[ -f "$out/comparison.html" ] || { tail -20 "$tmp/cmp.log"; fail "no comparison.html"; }
timeout -k 5 90 unshare -n -p -f -m --mount-proc --kill-child "$py" tests/tools/html_page.py "$out/comparison.html" --screenshot "$tmp/page.png" > "$tmp/page.json" 2> "$tmp/page.err" ||
  { tail -5 "$tmp/page.err"; fail "the browser did not open comparison.html"; }

"$py" - "$tmp/page.json" "$out" <<'PY' || fail "comparison.html"
import json, os, sys
page, out = json.load(open(sys.argv[1])), sys.argv[2]
bad = []
def check(cond, msg):
    if not cond: bad.append(msg)
    return cond
check(page.get("ready"), f"not ready: {page.get('error')}")
check(not page.get("console"), f"console: {page.get('console', [])[:3]}")
check(not page.get("requests"), f"requests: {page.get('requests', [])[:3]}")
shot = page.get("screenshot") or {}
check(shot.get("colours", 0) > 50 and shot.get("ink_pct", 0) > 1, f"blank screenshot: {shot}")
charts = {c["id"]: c for c in page["charts"]}
configs = ["baseline", "pinned"]
runs = {n: {k: json.load(open(os.path.join(out, f"{n}-{k}", f)))
            for k, f in (("rate", "summary.json"), ("max", "summary.json"))} for n in configs}
loads = {n: json.load(open(os.path.join(out, f"{n}-rate", "load-results.json"))) for n in configs}
# The spectra, as drawn: each point's position read back through the chart's scales is
# platoon-load's histogram, the percentile on HdrHistogram's axis (1 / (1 - p); the 100th at
# twice the request count) and the latency in ms.
for cid, key in (("spectrum", "latency_spectrum_us"), ("spectrum-uncorrected", "uncorrected_latency_spectrum_us")):
    sp = charts.get(cid)
    if not check(sp and not sp["absent"], f"no {cid} chart"): continue
    check(sp["series"] == 2 and sp["drawn"] == sp["points"], f"{cid}: {sp['series']} series, drew {sp['drawn']} of {sp['points']}")
    for n in configs:
        want = [(2.0 * loads[n]["requests"] if p >= 100 else 1 / (1 - p / 100), v / 1000) for p, v in loads[n][key]]
        got = sorted((v["x"], v["y"]) for v in sp["drawn_lines"] if v["s"] == n)
        check(len(got) == len(want) and len(want) > 10, f"{cid} of {n}: {len(got)} points drawn, load-results.json has {len(want)}")
        diff = [(i, g, w) for i, (g, w) in enumerate(zip(got, want))
                if abs(g[0] - w[0]) > 1e-6 * w[0] or abs(g[1] - w[1]) > 1e-6 * max(1, w[1])]
        check(not diff, f"{cid} of {n}: {len(diff)} points drawn elsewhere than load-results.json says, the first (index, drawn, load) {diff[:1]}")
        check(sp["counts"][n] == loads[n]["requests"], f"{cid} of {n}: count {sp['counts'][n]}, load sent {loads[n]['requests']}")
        print(f"{cid} of {n}: {len(got)} points drawn where platoon-load's histogram puts them ({loads[n]['requests']} requests)")
max_wait = lambda summary: max(t["wait_pct"] for t in summary["threads"])
for cid, kind, value in (("cpu-per-request", "rate", lambda r: r["cpu_us_per_request"]),
                         ("ctx-per-request", "rate", lambda r: r["context_switches_per_request"]),
                         ("carrier-wait", "rate", max_wait),
                         ("max-tps", "max", lambda r: r["rate"]), ("max-cpus", "max", lambda r: r["cpus_utilized"])):
    c = charts.get(cid)
    if not check(c and not c["absent"] and c["drawn"] == 2, f"no {cid} chart with two bars drawn: {c and c['drawn']}"): continue
    for n in configs:
        got = [v["y"] for v in c["values"] if v["s"] == n]
        want = value(runs[n][kind])
        check(got == [want], f"{cid} of {n}: chart {got}, {n}-{kind}/summary.json {want}")
    print(f"{cid}: " + ", ".join(f"{n} {value(runs[n][kind])}" for n in configs) + " as summary.json says")
# Each run's command, as run-benchmark.sh wrote it, is on the page.
for n in configs:
    for kind in ("rate", "max"):
        cmd = open(os.path.join(out, f"{n}-{kind}", "command.txt")).read().strip()
        check(cmd.startswith("scripts/run-benchmark.sh ") and cmd in page["text"], f"{n}-{kind}: its command is not on the page: {cmd}")
check(page["text"].count("run-quick-comparison.sh --only baseline,pinned") == 1, "the comparison's command is not on the page")
for b in bad: print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
echo PASS
