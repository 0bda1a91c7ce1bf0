#!/usr/bin/env bash
# The machine's context in a recording (issue 15): report --format json's per-CPU steal, irq
# and softirq time over the window agree with /proc/stat's own deltas read around the
# recording (never more than the bracket's, and its whole when nothing happened outside the
# window), every CPU's shares sum to 100%, and the target's CPU cgroup is the one
# /proc/PID/cgroup names. A CPU hog makes softirq and irq time unlikely to be all zero: the
# check holds for zeros too.
set -uo pipefail
. "$(dirname "$0")/lib/common.sh"
use_tmp machine
require_root
sh -c 'while :; do :; done' & hog=$!; pids+=($hog)
grep -E '^cpu[0-9]' /proc/stat > "$tmp/stat0"
"$platoon" record --pid "$hog" --duration 2 -i 0.5 -o "$tmp/m.trace" 2> "$tmp/rec.err" || { cat "$tmp/rec.err"; fail "record"; }
grep -E '^cpu[0-9]' /proc/stat > "$tmp/stat1"
"$platoon" report "$tmp/m.trace" --format json > "$tmp/r.json" || fail "report"
"$platoon" report "$tmp/m.trace" > "$tmp/r.txt" || fail "text report"
grep -q '^CPUs (/proc/stat' "$tmp/r.txt" || fail "text report has no CPUs section"
python3 - "$tmp/r.json" "$tmp/stat0" "$tmp/stat1" "$(getconf CLK_TCK)" "$hog" <<'PY' || fail "machine context"
import json, sys
d = json.load(open(sys.argv[1]))
tick_ns = 1e9 / int(sys.argv[4])
def stat(path):
    out = {}
    for line in open(path):
        f = line.split()
        out[int(f[0][3:])] = list(map(int, f[1:9]))  # user nice system idle iowait irq softirq steal
    return out
s0, s1 = stat(sys.argv[2]), stat(sys.argv[3])
assert d["source"] == "bpf", d["source"]
cpus = {c["cpu"]: c for c in d["cpus"]}
assert set(cpus) == set(s0), (sorted(cpus), sorted(s0))
for cpu, c in cpus.items():
    bracket = [b - a for a, b in zip(s0[cpu], s1[cpu])]
    for key, col in (("irq_ns", 5), ("softirq_ns", 6), ("steal_ns", 7)):
        assert 0 <= c[key] <= bracket[col] * tick_ns + 1, (cpu, key, c[key], bracket[col] * tick_ns)
    total = c["busy_pct"] + c["idle_pct"] + c["irq_pct"] + c["softirq_pct"] + c["steal_pct"]
    assert abs(total - 100) < 0.01, (cpu, total)
    print(f"cpu{cpu}: busy {c['busy_pct']:.1f}% steal {c['steal_ns']} ns irq {c['irq_ns']} softirq {c['softirq_ns']} "
          f"(bracket: steal {bracket[7]} irq {bracket[5]} softirq {bracket[6]} ticks)")
want = [l.split(":", 2)[2].strip() for l in open(f"/proc/{sys.argv[5]}/cgroup") if l.split(":")[1].split(",").count("cpu")]
want = want or [l.split(":", 2)[2].strip() for l in open(f"/proc/{sys.argv[5]}/cgroup") if l.startswith("0::")]
paths = [g["path"] for g in d["cgroups"]]
assert paths == want, (paths, want)
t = [t for t in d["threads"] if t["tid"] == int(sys.argv[5])][0]
parts = sum(t[k] for k in ("wait_contended_pct", "wait_throttled_pct", "wait_steal_pct", "wait_irq_pct", "wait_idle_exit_pct"))
assert abs(parts - t["wait_pct"]) < 0.01, (parts, t["wait_pct"])
print("cgroups:", paths, "wait split sums to wait_pct", t["wait_pct"])
PY
echo PASS
