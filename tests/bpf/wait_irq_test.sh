#!/usr/bin/env bash
# The irq part of a thread's wait, where the kernel accounts IRQ time (bpf/wait_split.bpf.h): a
# CPU hog pinned to CPU 0 beside two loopback TCP floods pinned there too waits while CPU 0 runs
# their receive path in softirq, so its irq wait is above 0, and it never exceeds CPU 0's irq +
# softirq time from /proc/stat between the polls nearest the recording's first and last snapshot
# (tests/tools/proc_poll.py, tests/tools/trace_snapshots.py). A kernel without IRQ time
# accounting has no irq part to check: wait_split_test.sh checks that the report says it lacks it.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/irq_time.sh"
. "$(dirname "$0")/../lib/proc_poll.sh"
require_root
irq_time_accounted ||
  skip "kernel does not account IRQ time (CONFIG_IRQ_TIME_ACCOUNTING is not set): irq wait is not measured here"
use_tmp wirq
tools=$(dirname "$0")/../tools

# Two loopback floods (tools/loopback_flood.py) on CPU 0: much of their receive path runs in
# softirq there.
taskset -c 0 python3 "$tools/loopback_flood.py" & pids+=($!)
taskset -c 0 python3 "$tools/loopback_flood.py" & pids+=($!)
taskset -c 0 sh -c 'while :; do :; done' & hog=$!; pids+=($hog)
record_polled "$hog" "$tmp/i.trace"
"$platoon" report "$tmp/i.trace" --format json > "$tmp/i.json" || fail "report"
python3 - "$tmp" "$hog" "$(getconf CLK_TCK)" "$tools" <<'PY' || fail "irq wait"
import json, sys
sys.path.insert(0, sys.argv[4])
from proc_poll import load, nearest
tmp, hog, tick_ns = sys.argv[1], int(sys.argv[2]), 1e9 / int(sys.argv[3])
d = json.load(open(f"{tmp}/i.json"))
snaps = json.load(open(f"{tmp}/i.trace.snaps"))
assert d["source"] == "bpf", d["source"]
assert "irq_wait" not in d["fields_missing"], ("the kernel accounts IRQ time, yet", d["fields_missing"])
reads = load(f"{tmp}/poll.jsonl")
(p0, gap0), (p1, gap1) = nearest(reads, snaps[0]), nearest(reads, snaps[-1])
window = snaps[-1] - snaps[0]
t = [t for t in d["threads"] if t["tid"] == hog][0]
irq_wait = t["wait_irq_pct"] / 100 * window
cpu0 = sum(p1["cpus"]["0"][5:7]) - sum(p0["cpus"]["0"][5:7])
bound = (cpu0 + 2 * 2) * tick_ns + gap0 + gap1
print(f"hog: wait {t['wait_pct']:.2f}%, irq wait {irq_wait / 1e6:.2f} ms; CPU 0's irq + softirq {cpu0} ticks,"
      f" bound {bound / 1e6:.1f} ms")
assert cpu0 > 2 * 2, "the floods left CPU 0 no interrupt time (/proc/stat)"
assert irq_wait > 0, "no irq wait under a softirq flood on the hog's CPU"
assert irq_wait <= bound, (irq_wait, bound)
PY
echo PASS
