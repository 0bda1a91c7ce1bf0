#!/usr/bin/env bash
# The exporter's per-CPU steal, irq and softirq counters against the kernel's own: each value a
# scrape serves lies between /proc/stat read just before and just after that scrape (the same
# counters, so no tolerance), with loopback traffic making the softirq counters move first. The
# traffic (scrapes itself) ends before the checked scrapes: scrapes within 100 ms share one
# rendering, so a scrape during the traffic may serve counters read before "before".
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp exporter_cpu
require_root
sleep 600 & target=$!; pids+=($target)
start_exporter "$tmp/exp.err" --pid "$target"
# Softirq work: loopback requests through the kernel's network receive path.
( end=$((SECONDS + 2)); while [ $SECONDS -lt $end ]; do curl -s "http://127.0.0.1:$eport/metrics" > /dev/null; done ) &
load=$!; pids+=($load)
wait "$load" 2>/dev/null
hz=$(getconf CLK_TCK)
for round in 1 2 3; do
  sleep 0.3
  cp /proc/stat "$tmp/before"
  curl -fsS "http://127.0.0.1:$eport/metrics" > "$tmp/m" || fail "scrape"
  cp /proc/stat "$tmp/after"
  python3 - "$tmp/before" "$tmp/m" "$tmp/after" "$hz" "$round" <<'PY' || fail "round $round"
import re, sys
before, metrics, after, hz, rnd = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
cols = {"steal": 8, "irq": 6, "softirq": 7}   # fields after "cpuN": user nice system idle iowait irq softirq steal
def stat(f):
    out = {}
    for line in open(f):
        m = re.match(r"cpu(\d+) (.*)", line)
        if m: out[m.group(1)] = [int(x) for x in m.group(2).split()]
    return out
b, a = stat(before), stat(after)
got = {}
for line in open(metrics):
    m = re.match(r'platoon_cpu_(steal|irq|softirq)_seconds_total\{cpu="(\d+)"\} (\S+)$', line)
    if m: got[(m.group(1), m.group(2))] = float(m.group(3))
assert set(c for _, c in got) == set(b), f"CPUs served {sorted(set(c for _, c in got))} vs /proc/stat {sorted(b)}"
for (kind, cpu), v in sorted(got.items()):
    lo, hi = b[cpu][cols[kind] - 1] / hz, a[cpu][cols[kind] - 1] / hz
    assert lo - 1e-9 <= v <= hi + 1e-9, f"{kind} cpu{cpu}: served {v}, /proc/stat {lo}..{hi}"
soft = sum(v for (k, _), v in got.items() if k == "softirq")
print(f"round {rnd}: {len(b)} CPUs, every served value within /proc/stat's; softirq total {soft:.2f} s")
PY
done
echo "PASS"
