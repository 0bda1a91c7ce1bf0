#!/usr/bin/env bash
# The instruments of scripts/bench-observer-cpu.sh do what the benchmark relies on:
#  - hook_floor attaches its seven do-nothing programs (bpftool lists them, each running), four
#    with --sched-only, and none is left after Ctrl-C, nor after kill -9 (the kernel drops them
#    with its descriptors);
#  - the switch program really runs once per context switch: its run count while probe_cost
#    hands a token back and forth, with the kernel's BPF stats on, is within 0.75-1.33x of
#    /proc/stat's ctxt over the same time;
#  - speedometer prints one sample per period, each a timestamp near now and positive work ns
#    whose thread-CPU part is no more than its wall time; bad input is one line and exit 2;
#  - the benchmark itself refuses bad options with one line and exit 2, before starting anything,
#    and leaves no process or program behind, whether it finishes or is stopped.
set -euo pipefail
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd bpftool
for b in hook_floor speedometer probe_cost; do [ -x "$bin/$b" ] || fail "$bin/$b not built"; done
use_tmp bench-tools
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing

floor_progs() { bpftool prog show | grep -c ' name floor_' || true; }
[ "$(floor_progs)" = 0 ] || fail "floor programs loaded before the test"

# Attached, counted against the kernel's own context switches, detached by Ctrl-C.
restore_stats=$(sysctl -n kernel.bpf_stats_enabled)
# (run: a benchmark started below, in timeout's own process group)
cleanup() {
  set +e; [ -n "${run:-}" ] && kill -TERM -- "-$run" 2> /dev/null
  stop_pids 0.3; sysctl -qw kernel.bpf_stats_enabled="$restore_stats"; rm -rf "$tmp"
}
sysctl -qw kernel.bpf_stats_enabled=1
"$bin/hook_floor" > "$tmp/floor.log" 2>&1 & floor=$!; pids+=($floor)
wait_started "$tmp/floor.log" attached hook_floor
[ "$(floor_progs)" = 7 ] || { bpftool prog show | grep floor_; fail "expected 7 floor programs, found $(floor_progs)"; }
switch_runs() { bpftool prog show name floor_switch | grep -o 'run_cnt [0-9]*' | awk '{ print $2 }'; }
ctxt() { awk '$1 == "ctxt" { print $2 }' /proc/stat; }
# An idle machine switches too rarely for a ratio: probe_cost's futex hand-offs add ~40,000.
r0=$(switch_runs); c0=$(ctxt)
"$bin/probe_cost" --epoll-calls 1000 --switches 40000 --cpu 0 > /dev/null || fail "probe_cost failed"
sleep 0.5; r1=$(switch_runs); c1=$(ctxt)
sysctl -qw kernel.bpf_stats_enabled="$restore_stats"
runs=$((r1 - r0)) switches=$((c1 - c0))
echo "floor_switch ran $runs times, /proc/stat counted $switches context switches"
python3 -c "import sys; r, s = int(sys.argv[1]), int(sys.argv[2]); sys.exit(0 if s > 20000 and 0.75 <= r / s <= 1.33 else 1)" \
  "$runs" "$switches" || fail "floor_switch runs $runs against $switches context switches"
kill -INT "$floor"; wait "$floor" || fail "hook_floor exited $? on Ctrl-C"
[ "$(floor_progs)" = 0 ] || fail "floor programs left after Ctrl-C"
echo "ok hook_floor: 7 programs attached, switch runs match ctxt, none left after Ctrl-C"

# --sched-only leaves out the three epoll exits; kill -9: nothing to run a destructor, the
# kernel still lets go.
"$bin/hook_floor" --sched-only > "$tmp/floor9.log" 2>&1 & floor=$!; pids+=($floor)
wait_started "$tmp/floor9.log" attached hook_floor
# grep reads a file, not a pipe: with pipefail, grep -q leaving early could fail bpftool.
bpftool prog show > "$tmp/progs9.txt" || fail "bpftool prog show"
[ "$(floor_progs)" = 4 ] && ! grep -q ' name floor_epoll' "$tmp/progs9.txt" ||
  { bpftool prog show | grep floor_; fail "--sched-only: expected the 4 scheduler programs"; }
echo "ok hook_floor --sched-only: the 4 scheduler programs, no epoll exit"
kill -KILL "$floor"; wait "$floor" 2> /dev/null || true
for _ in $(seq 50); do [ "$(floor_progs)" = 0 ] && break; sleep 0.1; done
[ "$(floor_progs)" = 0 ] || fail "floor programs left after kill -9"
echo "ok hook_floor: none left after kill -9"
expect_error --status 2 usage "$bin/hook_floor" --bogus

# speedometer: one sample per period, plausible numbers.
"$bin/speedometer" --cpu 0 --period-ms 10 --out "$tmp/speed.txt" & sp=$!; pids+=($sp)
sleep 1; kill "$sp"; wait "$sp" 2> /dev/null || true
now=$(date +%s%N)
python3 - "$tmp/speed.txt" "$now" <<'PY' || fail "speedometer samples implausible (above)"
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 3]
now = int(sys.argv[2])
print(f"{len(rows)} samples in 1 s at a 10 ms period")
assert 20 <= len(rows) <= 110, "expected about one sample per period"
for t, wall, cpu in rows:
    assert now - 5e9 < t <= now, f"timestamp {t} not within the last 5 s of {now}"
    # The two clocks are read one after the other, and a vCPU stalled between the reads puts
    # tens of microseconds on one side (seen: 110 us of CPU in a 68 us sample): 100 us of slack.
    assert 0 < cpu <= wall * 1.01 + 100000, f"thread CPU {cpu} ns against wall {wall} ns"
    assert wall < 1e9, f"one sample took {wall} ns"
PY
echo "ok speedometer"
expect_error --status 2 'period-ms' "$bin/speedometer" --period-ms 0
expect_error --status 2 usage "$bin/speedometer" --bogus

# The benchmark's option checks come before it starts a process.
expect_error --status 2 'rounds' scripts/bench-observer-cpu.sh "$BUILD" --rounds x
expect_error --status 2 'unknown condition' scripts/bench-observer-cpu.sh "$BUILD" --conditions none,bogus
expect_error --status 2 'duration' scripts/bench-observer-cpu.sh "$BUILD" --duration 5s
expect_error --status 2 'unknown option' scripts/bench-observer-cpu.sh "$BUILD" --bogus
# bench-tracing-overhead takes the same conditions, and refuses a typo before it clears the
# results of its last run.
mkdir -p "$BUILD/bench/tracing-overhead"; touch "$BUILD/bench/tracing-overhead/last-run"
expect_error --status 2 'unknown condition' scripts/bench-tracing-overhead.sh "$BUILD" --conditions none,bogus
[ -e "$BUILD/bench/tracing-overhead/last-run" ] || fail "bench-tracing-overhead cleared its results for a bad condition"
rm -f "$BUILD/bench/tracing-overhead/last-run"

# A short run leaves nothing behind, finished or stopped by SIGTERM, also when started as a
# background job (whose children ignore SIGINT): the runs of 2026-12-06 left their servers up.
# Each run has its own limit: one still running after it is hung, and the test shows where it
# stood (its log, and its processes' kernel wait channels while they still wait), then ends its
# process group (timeout's: the outer limit, which also passes the test's SIGTERM on).
leftovers() { pgrep -f "$bin/(platoon-server|platoon-load|platoon-mock|speedometer|hook_floor)" || true; }
bench=(timeout --kill-after=10 150 scripts/bench-observer-cpu.sh "$BUILD")   # run as $!, not a subshell
hung() {  # hung LOG MESSAGE
  echo "--- $1:"; tail -5 "$1"
  ps -eo pid,stat,wchan:24,etime,args | grep -E 'bench-observer|hook_floor|platoon-|speedometer|curl|sleep' | grep -v grep || true
  kill -TERM -- "-$run" 2> /dev/null || true; sleep 2; kill -KILL -- "-$run" 2> /dev/null || true
  fail "$2"
}
finish() {  # finish LOG LIMIT_S: $run's exit status, or hung after LIMIT_S
  local _
  for _ in $(seq $(($2 * 10))); do kill -0 "$run" 2> /dev/null || break; sleep 0.1; done
  kill -0 "$run" 2> /dev/null && hung "$1" "bench-observer-cpu still running after $2 s"
  wait "$run"
}
[ -z "$(leftovers)" ] || fail "benchmark processes running before the run: $(leftovers)"
"${bench[@]}" --rounds 2 --duration 1 --settle 0.5 --conditions none,floor > "$tmp/run.log" 2>&1 & run=$!
status=0; finish "$tmp/run.log" 90 || status=$?
[ "$status" = 0 ] || hung "$tmp/run.log" "bench-observer-cpu exited $status"
grep -q 'floor ' "$tmp/run.log" || hung "$tmp/run.log" "no floor row in the summary"
[ -z "$(leftovers)" ] || fail "left running after a finished run: $(leftovers)"
"${bench[@]}" --rounds 5 --duration 2 --settle 1 --conditions none,floor > "$tmp/run2.log" 2>&1 & run=$!
for _ in $(seq 100); do grep -q 'round 1 floor' "$tmp/run2.log" && break; sleep 0.1; done
kill -TERM "$run"; status=0; finish "$tmp/run2.log" 30 2> /dev/null || status=$?
[ "$status" != 124 ] && [ "$status" != 137 ] || hung "$tmp/run2.log" "bench-observer-cpu did not end on SIGTERM (status $status)"
[ -z "$(leftovers)" ] || fail "left running after SIGTERM: $(leftovers)"
[ "$(floor_progs)" = 0 ] || fail "floor programs left after SIGTERM"
echo "ok bench-observer-cpu: nothing left after a finished run or SIGTERM"
echo "PASS"
