#!/usr/bin/env bash
# --cgroup PATH: `record --cgroup` records exactly the group's tasks, followed as they
# come and go. In a fresh CPU cgroup: A (a duty-cycle loop, in it all along), E (in it, moved out
# after ~1.2 s), P (a shell that forks D into the group after ~2 s: a fork followed), C (started
# outside, moved in after ~1 s); B runs the same loop outside the group all along. The truth is
# the kernel's own: every pid the test saw in cgroup.procs (polled every 20 ms), and the run time
# /proc/<pid>/schedstat gives A. Checked: B and nothing outside the group is recorded; A, C, D, E
# are; E's run time is that of its ~1.2 s inside (well under A's), C's that of its ~3 s; A's run
# time as schedstat says it ran from the recorder's start line to its end. Also with
# --procfs, and --cgroup taking the group's directory as well as its path.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cgroups.sh"
use_tmp cgtarget
require_root
require_cmd python3
cg=$(make_cpu_cgroup "platoon-members-$$" -1 100000) || skip "no cgroup cpu controller here"
poller=""
cleanup() {
  [ -n "$poller" ] && kill "$poller" 2>/dev/null
  for f in "$tmp"/*.d; do [ -e "$f" ] && pids+=("$(cat "$f")"); done
  stop_pids; remove_cgroup "$cg"; rm -rf "$tmp"
}
# The interpreter itself: pyenv's python3 is a shell script whose own forks (bash, readlink)
# would come and go in the group faster than the test's poll of cgroup.procs sees them.
py=$(python3 -c 'import sys; print(sys.executable)')

cat > "$tmp/duty.py" <<'PY'
import time
while True:                      # ~30% of a CPU, ~100 sleeps a second
    t = time.time() + 0.003
    while time.time() < t: pass
    time.sleep(0.007)
PY
duty() { "$py" "$tmp/duty.py" & pids+=($!); }
schedstat_run() { awk '{ print $1 }' "/proc/$1/schedstat"; }

# run LABEL ARGS..: one recording of 4 s with the members changing under it; checks the report.
run() {
  local label=$1; shift
  duty; local a=${pids[-1]}; cgroup_add_pid "$cg" "$a"
  duty; local e=${pids[-1]}; cgroup_add_pid "$cg" "$e"
  duty; local b=${pids[-1]}
  sh -c "sleep 2; '$py' '$tmp/duty.py' & echo \$! > '$tmp/$label.d'; wait" & pids+=($!); local p=$!
  cgroup_add_pid "$cg" "$p"
  : > "$tmp/$label.seen"
  (while :; do cat "$cg/cgroup.procs" >> "$tmp/$label.seen"; sleep 0.02; done) & poller=$!
  "$platoon" record -i 0.25 -d 4 -o "$tmp/$label.trace" "$@" 2> "$tmp/$label.err" & local rec=$!
  for _ in $(seq 100); do grep -qs "Ctrl-C to stop" "$tmp/$label.err" && break; sleep 0.05; done
  grep -q "Ctrl-C to stop" "$tmp/$label.err" || { cat "$tmp/$label.err"; fail "$label: record did not start"; }
  local a0; a0=$(schedstat_run "$a")   # attached by now: from here on platoon counts A
  duty; local c=${pids[-1]}
  sleep 1; cgroup_add_pid "$cg" "$c"
  sleep 0.2; echo "$e" > "$(dirname "$cg")/cgroup.procs"
  wait "$rec" || { cat "$tmp/$label.err"; fail "$label: record"; }
  local a1; a1=$(schedstat_run "$a")
  kill "$poller"; poller=""
  "$platoon" report "$tmp/$label.trace" --format json > "$tmp/$label.json" || fail "$label: report"
  python3 - "$tmp/$label.json" "$tmp/$label.seen" "$label" "$a" "$b" "$c" "$(cat "$tmp/$label.d")" "$e" "$a0" "$a1" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1])); label = sys.argv[3]
a, b, c, dd, e, a0, a1 = map(int, sys.argv[4:11])
seen = {int(x) for x in open(sys.argv[2]).read().split()}
run = {}
for t in d["threads"]:
    run[t["pid"]] = run.get(t["pid"], 0) + t["run_ns"]
outside = sorted(set(run) - seen)
assert not outside, f"{label}: recorded pids never in the group: {outside} (B is {b})"
assert b not in run, f"{label}: B ({b}, outside the group) was recorded"
for name, pid in (("A", a), ("C", c), ("D (forked in the group)", dd), ("E", e)):
    assert pid in run, f"{label}: {name} ({pid}) not recorded: {sorted(run)}"
ra, rc, re = run[a], run[c], run[e]
truth = a1 - a0
assert 0.85 * truth <= ra <= 1.15 * truth + 20e6, f"{label}: A ran {ra/1e6:.0f} ms by platoon, {truth/1e6:.0f} ms by schedstat"
assert re < 0.6 * ra, f"{label}: E ({re/1e6:.0f} ms) left after ~1.2 s of 4 but ran as long as A ({ra/1e6:.0f} ms)"
assert 0.45 * ra < rc < 1.1 * ra, f"{label}: C ({rc/1e6:.0f} ms) joined after ~1 s: expected ~3/4 of A ({ra/1e6:.0f} ms)"
print(f"{label}: {len(run)} pids recorded, all seen in the group; A {ra/1e6:.0f} ms (schedstat {truth/1e6:.0f}), "
      f"C {rc/1e6:.0f}, E {re/1e6:.0f}; B absent")
PY
  pids+=("$(cat "$tmp/$label.d")")
  stop_pids 0.1; pids=()
}

run bpf --cgroup "/$(basename "$cg")"
src=$(json "$tmp/bpf.json" 'd["source"]'); [ "$src" = bpf ] || fail "bpf run had source $src"
run procfs --procfs --cgroup "$cg"
echo "PASS: cgroup_target_test"
