#!/usr/bin/env bash
# The machine's context in a recording: report --format json's per-CPU figures over the window
# (busy and idle shares, steal, irq and softirq time) equal /proc/stat's own deltas between the
# recording's first and last snapshot, on both sides. /proc/stat is polled every 10 ms beside
# the recording (tests/tools/proc_poll.py) and read at the polls nearest the snapshots' own
# stamps (tests/tools/trace_snapshots.py); the tolerance per /proc/stat column is two ticks
# (each end is a count rounded down to a tick) plus the gap between a snapshot and its poll, at
# the most a CPU's columns can grow (one CPU-second per second). Two loopback TCP floods keep
# both CPUs busy and in softirq, so a reader that returns 0 for softirq, swaps busy and idle or
# reads a neighbouring column misses by far more than that. The target's CPU cgroup is the one
# /proc/PID/cgroup names.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/proc_poll.sh"
use_tmp machine
require_root
tools=$(dirname "$0")/../tools

# Two loopback floods (tools/loopback_flood.py): much of their receive path runs in softirq.
python3 "$tools/loopback_flood.py" & flood=$!; pids+=($flood)
python3 "$tools/loopback_flood.py" & pids+=($!)
record_polled "$flood" "$tmp/m.trace"
"$platoon" report "$tmp/m.trace" --format json > "$tmp/r.json" || fail "report"
"$platoon" report "$tmp/m.trace" > "$tmp/r.txt" || fail "text report"
grep -q '^CPUs (/proc/stat' "$tmp/r.txt" || fail "text report has no CPUs section"
python3 - "$tmp/r.json" "$tmp/poll.jsonl" "$tmp/m.trace.snaps" "$(getconf CLK_TCK)" "$flood" "$tools" <<'PY' || fail "machine context"
import json, sys
sys.path.insert(0, sys.argv[6])
from proc_poll import load, nearest
d = json.load(open(sys.argv[1]))
snaps = json.load(open(sys.argv[3]))
tick_ns = 1e9 / int(sys.argv[4])
assert d["source"] == "bpf", d["source"]
# The report's window runs from the first snapshot to the last.
(p0, gap0), (p1, gap1) = nearest(load(sys.argv[2]), snaps[0]), nearest(load(sys.argv[2]), snaps[-1])
slack = (gap0 + gap1) / tick_ns          # ticks any group of a CPU's columns can grow in the gaps
print(f"window {(snaps[-1] - snaps[0]) / 1e9:.3f} s; polls {gap0 / 1e6:.1f} and {gap1 / 1e6:.1f} ms from the snapshots")
cpus = {c["cpu"]: c for c in d["cpus"]}
assert set(cpus) == {int(c) for c in p0["cpus"]}, (sorted(cpus), sorted(p0["cpus"]))
GROUPS = {"busy": (0, 1, 2), "idle": (3, 4), "irq": (5,), "softirq": (6,), "steal": (7,)}
softirq_seen = False
for cpu, c in sorted(cpus.items()):
    delta = [b - a for a, b in zip(p0["cpus"][str(cpu)], p1["cpus"][str(cpu)])]
    truth = {g: sum(delta[i] for i in cols) for g, cols in GROUPS.items()}
    tol = {g: 2 * len(cols) + slack for g, cols in GROUPS.items()}
    for g in ("steal", "irq", "softirq"):
        got = c[f"{g}_ns"] / tick_ns
        print(f"cpu{cpu} {g}: {got:.1f} ticks, /proc/stat {truth[g]} ± {tol[g]:.1f}")
        assert abs(got - truth[g]) <= tol[g], (cpu, g, got, truth[g], tol[g])
    total, total_tol = sum(truth.values()), 2 * 8 + slack
    for g in ("busy", "idle"):
        lo = 100 * max(0, truth[g] - tol[g]) / (total + total_tol)
        hi = 100 * (truth[g] + tol[g]) / max(1, total - total_tol)
        print(f"cpu{cpu} {g}: {c[g + '_pct']:.2f}%, /proc/stat {100 * truth[g] / total:.2f}% [{lo:.2f}, {hi:.2f}]")
        assert lo <= c[g + "_pct"] <= hi, (cpu, g, c[g + "_pct"], lo, hi)
    softirq_seen |= truth["softirq"] > tol["softirq"] + 2
# The premise that makes the softirq check bite, from /proc/stat alone.
assert softirq_seen, "the loopback floods left no CPU with softirq time to tell from 0"
want = [l.split(":", 2)[2].strip() for l in open(f"/proc/{sys.argv[5]}/cgroup") if l.split(":")[1].split(",").count("cpu")]
want = want or [l.split(":", 2)[2].strip() for l in open(f"/proc/{sys.argv[5]}/cgroup") if l.startswith("0::")]
paths = [g["path"] for g in d["cgroups"]]
assert paths == want, (paths, want)
print("cgroups:", paths)
PY
echo PASS
