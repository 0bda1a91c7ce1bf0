#!/usr/bin/env bash
# What each tracer adds to one epoll wait call, to one other syscall and to one context switch,
# as the traced program sees it (build/bin/probe_cost: its own clock around 1M non-blocking
# epoll_wait calls that return one event, 1M getppid calls, and 200k futex hand-offs between two
# threads pinned to one CPU, each a wakeup plus a switch). Unlike the programs' kernel.bpf_stats
# run time, this includes the tracepoint machinery, the interrupts that land inside a program,
# and the stats' own clock reads.
#
# Conditions, alternating within each round: none; `floor` (bpftrace with one do-nothing
# sys_exit_epoll_wait program: what any syscall-tracepoint hook costs on this kernel);
# platoon record (as shipped: the kernel's BPF run-time stats sampled, 100 ms of every second),
# record --bpf-stats-always, record --no-bpf-stats, record --no-io (no epoll programs), top
# --batch, exporter; perf sched record.
# Medians over the rounds of (condition - that round's untraced run).
#
# usage: scripts/bench-probe-cost.sh [BUILD_DIR] [--rounds N]
#   CPUs: probe_cost on CPU 1, tracers' user space on CPU 0.
# Writes BUILD_DIR/bench/probe-cost.json.
set -euo pipefail
build=build
[ $# -gt 0 ] && [[ $1 != --* ]] && { build=$1; shift; }
rounds=5
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench-probe-cost: unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/bin
out=$build/bench/probe-cost
mkdir -p "$out"
[ "$(id -u)" = 0 ] || { echo "bench-probe-cost: needs root" >&2; exit 1; }
[ -x "$bin/probe_cost" ] || { echo "bench-probe-cost: $bin/probe_cost not built (make BUILD=$build)" >&2; exit 1; }
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
tracer=
cleanup() { [ -z "$tracer" ] || kill -KILL "$tracer" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
probe=(taskset -c 1 "$bin/probe_cost" --epoll-calls 1000000 --switches 200000)

run() {  # condition round → $out/COND-ROUND.json
  local c=$1 r=$2 j="$out/$1-$2.json"
  case $c in
    none) "${probe[@]}" --out "$j" ;;
    floor)
      taskset -c 0 bpftrace -e 'tracepoint:syscalls:sys_exit_epoll_wait /pid == 1/ { @n = count(); }' > "$out/bt.log" 2>&1 & tracer=$!
      for _ in $(seq 200); do grep -q Attaching "$out/bt.log" && break; sleep 0.05; done; sleep 0.5
      "${probe[@]}" --out "$j"
      kill -INT "$tracer"; wait "$tracer" || true; tracer= ;;
    record) taskset -c 0 "$bin/platoon" record -q -o "$out/r.trace" -- "${probe[@]}" --out "$j" 2> "$out/record-$r.err" ;;
    record-always) taskset -c 0 "$bin/platoon" record -q --bpf-stats-always -o "$out/r.trace" -- "${probe[@]}" --out "$j" 2> /dev/null ;;
    record-noio) taskset -c 0 "$bin/platoon" record -q --no-io -o "$out/r.trace" -- "${probe[@]}" --out "$j" 2> /dev/null ;;
    record-nostats) taskset -c 0 "$bin/platoon" record -q --no-bpf-stats -o "$out/r.trace" -- "${probe[@]}" --out "$j" 2> /dev/null ;;
    top) taskset -c 0 "$bin/platoon" top --batch -- "${probe[@]}" --out "$j" > /dev/null 2>&1 ;;
    exporter)
      "${probe[@]}" --delay 2 --out "$j" & local p=$!
      taskset -c 0 "$bin/platoon" exporter --pid "$p" --listen 127.0.0.1:0 2> "$out/exp.err" & tracer=$!
      wait "$p"; kill -INT "$tracer"; wait "$tracer" || true; tracer= ;;
    perf) taskset -c 0 perf sched record -o "$out/perf.data" -- "${probe[@]}" --out "$j" > /dev/null 2>&1; rm -f "$out/perf.data" ;;
  esac
}

conditions=(none floor record record-always record-nostats record-noio top exporter perf)
for r in $(seq "$rounds"); do
  for c in "${conditions[@]}"; do
    run "$c" "$r"
    echo "round $r $c: $(cat "$out/$c-$r.json")"
  done
done
rm -f "$out/r.trace"

python3 - "$out" "$rounds" "$build/bench/probe-cost.json" "${conditions[@]}" <<'PY'
import json, statistics, sys
out, rounds, dest, conds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
d = {c: [json.load(open(f"{out}/{c}-{r}.json")) for r in range(1, rounds + 1)] for c in conds}
res = {}
for c in conds:
    res[c] = {}
    for k in ("epoll_ns", "syscall_ns", "switch_ns"):
        v = [x[k] for x in d[c]]
        res[c] |= {k: v, k + "_median": statistics.median(v),
                   "added_" + k: statistics.median(d[c][i][k] - d["none"][i][k] for i in range(rounds))}
json.dump({"cpus": {"probe_cost": "1", "tracers": "0"}, "rounds": rounds, "conditions": res}, open(dest, "w"), indent=2)
print(f"{'condition':16} {'ns/epoll call':>14} {'added':>8} {'ns/getppid':>11} {'added':>8} {'ns/hand-off':>12} {'added':>8}")
for c in conds:
    r = res[c]
    print(f"{c:16} {r['epoll_ns_median']:14.0f} {r['added_epoll_ns']:8.0f} {r['syscall_ns_median']:11.1f} {r['added_syscall_ns']:8.1f}"
          f" {r['switch_ns_median']:12.0f} {r['added_switch_ns']:8.0f}")
print("(added: median over rounds of condition minus that round's untraced run; getppid: any syscall not traced itself;"
      " a hand-off is a wakeup plus a switch)")
print(f"wrote {dest}")
PY
