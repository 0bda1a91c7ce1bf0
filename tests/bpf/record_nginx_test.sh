#!/usr/bin/env bash
# platoon record attaches, without a restart, to a process it did not build: nginx (Debian's)
# proxying the mock under load. Its worker processes show up with their epoll cycles, and their
# switch counts agree with /proc/PID/status over the recording (load runs only inside it).
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp recngx
stop_grace=0.5
require_root
switches() { awk '/^voluntary_ctxt_switches/{v=$2} /^nonvoluntary_ctxt_switches/{n=$2} END{print v+n}' "/proc/$1/status"; }

start_mock
start_nginx
echo "nginx master $master workers $workers"

s0=(); for w in ${workers//,/ }; do s0+=("$(switches "$w")"); done
"$bin/platoon" record -i 0.5 --pid "$master,$workers" -o "$tmp/n.trace" 2> "$tmp/rec.err" & rec=$!; pids+=($rec)
wait_started "$tmp/rec.err" recording record
sport=$nport run_load --rate 2000 --connections 40 --threads 1 --duration 3 --json "$tmp/load.json" > /dev/null 2>&1 || fail "load"
sleep 0.3
kill -INT "$rec"; wait "$rec" || { cat "$tmp/rec.err"; fail "record exit status"; }
s1=(); for w in ${workers//,/ }; do s1+=("$(switches "$w")"); done
"$bin/platoon" report "$tmp/n.trace" --format json > "$tmp/r.json" || fail "report"
"$bin/platoon" report "$tmp/n.trace" | head -30

i=0
for w in ${workers//,/ }; do
  d=$(( ${s1[$i]} - ${s0[$i]} )); i=$((i + 1))
  python3 - "$tmp/r.json" "$w" "$d" <<'PY' || fail "nginx worker $w"
import json, sys
d = json.load(open(sys.argv[1])); tid = int(sys.argv[2]); procfs = int(sys.argv[3])
t = [t for t in d["threads"] if t["tid"] == tid]
assert t, f"worker {tid} missing from the report"
t = t[0]; sw = t["switches_voluntary"] + t["switches_involuntary"]
io = t.get("io") or {}
print(f"worker {tid} ({t['comm']}): cpu={t['cpu_pct']:.1f}% wait={t['wait_pct']:.2f}% switches={sw} (/proc {procfs}) "
      f"io cycles={io.get('cycles')} events/cycle={io.get('events_per_cycle')}")
assert t["comm"].startswith("nginx"), t["comm"]
assert abs(sw - procfs) <= max(5, 0.01 * procfs), "switches differ from /proc status"
# The kernel may hand every connection to one worker: the busy ones must show epoll cycles.
assert sw < 100 or io.get("cycles", 0) > 100, "a busy nginx worker without epoll cycles"
open(sys.argv[1] + ".cycles", "a").write(f"{io.get('cycles', 0)}\n")
PY
done
total=$(awk '{ s += $1 } END { print s + 0 }' "$tmp/r.json.cycles")
[ "$total" -gt 1000 ] || fail "nginx workers made only $total epoll cycles under load"
echo PASS
