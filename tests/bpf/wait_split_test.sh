#!/usr/bin/env bash
# Why a thread waited, live (bpf/wait_split.bpf.h): a lone CPU hog in a CPU cgroup with a quota
# of 20 ms per 100 ms is runnable all the time and runs only when the quota lets it, so its
# throttled wait is the window less its run time (/proc/<tid>/schedstat, read every 10 ms by
# tests/tools/proc_poll.py at the polls nearest the recording's first and last snapshot), within
# 10%; with the quota lifted the same hog shows no throttled wait. The group gets the highest CPU
# weight so that other tasks on the machine barely preempt the hog while it has quota left:
# that wait is contended, not throttled. The irq part of the wait: where the kernel accounts IRQ
# time (decided from its config, tests/lib/irq_time.sh) it never exceeds the CPUs' irq + softirq
# time from /proc/stat; where it does not, the report leaves it out and its source line says
# `lacks: ... irq_wait` instead of showing a 0 that looks measured.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cgroups.sh"
. "$(dirname "$0")/../lib/irq_time.sh"
use_tmp wsplit
require_root
tools=$(dirname "$0")/../tools
cg=$(make_cpu_cgroup "platoon-wsplit-$$" 20000 100000) || skip "no cgroup cpu controller here"
cleanup() { stop_pids; remove_cgroup "$cg"; rm -rf "$tmp"; }
if [ -f "$cg/cpu.weight" ]; then echo 10000 > "$cg/cpu.weight"; else echo 262144 > "$cg/cpu.shares"; fi ||
  fail "could not raise the group's CPU weight"
if irq_time_accounted; then irq_time=1; else irq_time=0; fi

sh -c 'while :; do :; done' & hog=$!; pids+=($hog)
cgroup_add_pid "$cg" "$hog" || fail "could not move the hog into $cg"
# At a real-time priority, so that the polls keep their 10 ms beside busy CPUs.
chrt -f 1 python3 "$tools/proc_poll.py" "$tmp/poll.jsonl" "/proc/$hog/schedstat" & poller=$!; pids+=($poller)

# record_hog NAME: 2 s of the hog, its reports and its snapshots' stamps.
record_hog() {
  sleep 0.3
  timeout 20 "$platoon" record --pid "$hog" --duration 2 -i 0.5 -o "$tmp/$1.trace" 2> "$tmp/$1.err" ||
    { cat "$tmp/$1.err"; fail "record ($1)"; }
  "$platoon" report "$tmp/$1.trace" --format json > "$tmp/$1.json" || fail "report ($1)"
  "$platoon" report "$tmp/$1.trace" > "$tmp/$1.txt" || fail "text report ($1)"
  python3 "$tools/trace_snapshots.py" "$tmp/$1.trace" > "$tmp/$1.snaps" || fail "could not decode the snapshots' stamps ($1)"
}
record_hog quota
set_cpu_quota "$cg" -1 100000 || fail "could not lift the quota"
record_hog free
sleep 0.1
kill "$poller"; wait "$poller"

python3 - "$tmp" "$hog" "$(getconf CLK_TCK)" "$irq_time" "$tools" <<'PY' || fail "wait split"
import json, re, sys
sys.path.insert(0, sys.argv[5])
from proc_poll import load, nearest
tmp, hog, tick_ns, irq_time = sys.argv[1], int(sys.argv[2]), 1e9 / int(sys.argv[3]), sys.argv[4] == "1"
reads = [r for r in load(f"{tmp}/poll.jsonl") if f"/proc/{hog}/schedstat" in r["files"]]

def check(name):
    d = json.load(open(f"{tmp}/{name}.json"))
    snaps = json.load(open(f"{tmp}/{name}.snaps"))
    assert d["source"] == "bpf", d["source"]
    (p0, gap0), (p1, gap1) = nearest(reads, snaps[0]), nearest(reads, snaps[-1])
    window = snaps[-1] - snaps[0]
    run = int(p1["files"][f"/proc/{hog}/schedstat"].split()[0]) - int(p0["files"][f"/proc/{hog}/schedstat"].split()[0])
    slack = gap0 + gap1                  # the hog runs at most one CPU-second per second
    t = [t for t in d["threads"] if t["tid"] == hog][0]
    throttled = t["wait_throttled_pct"] / 100 * window
    print(f"{name}: window {window / 1e6:.1f} ms, run {run / 1e6:.1f} ms (schedstat ± {slack / 1e6:.1f}),"
          f" wait {t['wait_pct']:.2f}%: contended {t['wait_contended_pct']:.2f}%, throttled {t['wait_throttled_pct']:.2f}%"
          f" = {throttled / 1e6:.1f} ms")
    # The irq part: measured only where the kernel accounts IRQ time, and then never more than
    # the CPUs' interrupt time.
    text = open(f"{tmp}/{name}.txt").read()
    source = re.search(r"^source: .*$", text, re.M).group(0)
    if irq_time:
        assert "irq_wait" not in d["fields_missing"], (source, d["fields_missing"])
        irq_truth = sum(sum(p1["cpus"][c][5:7]) - sum(p0["cpus"][c][5:7]) for c in p0["cpus"])
        bound = (irq_truth + 2 * 2 * len(p0["cpus"])) * tick_ns + slack
        irq_wait = t["wait_irq_pct"] / 100 * window
        print(f"  irq wait {irq_wait / 1e6:.2f} ms <= the CPUs' irq + softirq {bound / 1e6:.1f} ms")
        assert irq_wait <= bound, (irq_wait, bound)
    else:
        assert "irq_wait" in d["fields_missing"], ("irq wait shown as measured", d["fields_missing"])
        assert re.search(r"\(lacks: .*irq_wait", source), source
        assert "wait_irq_pct" not in t, ("a 0 that looks measured", t.get("wait_irq_pct"))
        print(f"  {source}")
    return window, run, slack, throttled

window, run, slack, throttled = check("quota")
expected = window - run
assert expected > 0.5 * window, "the quota did not hold the hog back (schedstat)"
assert abs(throttled - expected) <= 0.10 * expected + slack, \
    f"throttled wait {throttled / 1e6:.1f} ms is not within 10% of window - run {expected / 1e6:.1f} ms"
window, run, slack, throttled = check("free")
assert throttled <= 0.01 * window, f"throttled wait {throttled / 1e6:.1f} ms without a quota"
PY
echo PASS
