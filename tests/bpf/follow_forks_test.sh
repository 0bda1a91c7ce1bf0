#!/usr/bin/env bash
# Following forks: `record -- sh -c 'python3 mt.py'` has the python
# program's threads in the report, with the switch counts /proc/<tid>/status gives them (the
# program writes them itself once its threads are parked, then waits to be killed), and
# --no-follow-forks records only the shell. Also `--pid SHELL --follow-forks` and procfs.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp follow
# Every python started writes its pid to $tmp/*.pypid; they are killed by those pids.
cleanup() { for f in "$tmp"/*.pypid; do [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
require_root
require_cmd python3

cat > "$tmp/mt.py" <<'PY'
import os, sys, threading, time
open(sys.argv[1] + '.pypid', 'w').write(str(os.getpid()))
parked = threading.Barrier(5)
def work():
    for _ in range(100):
        time.sleep(0.001)
        t = time.time() + 0.0005
        while time.time() < t: pass
    parked.wait()
    threading.Event().wait()
for _ in range(4): threading.Thread(target=work, daemon=True).start()
parked.wait()
time.sleep(0.2)
with open(sys.argv[1] + '.tmp', 'w') as f:
    for tid in os.listdir('/proc/self/task'):
        st = dict(l.split(':', 1) for l in open('/proc/self/task/%s/status' % tid))
        f.write('%s %s %s\n' % (tid, st['voluntary_ctxt_switches'].strip(), st['nonvoluntary_ctxt_switches'].strip()))
os.rename(sys.argv[1] + '.tmp', sys.argv[1])
time.sleep(3600)
PY

# check TRACE TRUTH LABEL: every tid of TRUTH is in the report with exactly its switch counts.
# The threads are asleep for good once TRUTH exists, so their /proc counts read now (the
# recording has ended, the program still runs) are final: exact, the main thread included
# (its own reading of them was followed by the write, which a busy machine may preempt).
# A thread already gone is compared with TRUTH, the main thread allowed 2 more (the write).
check() {
  "$platoon" report "$1" --format json > "$1.json" || fail "$3: report"
  python3 - "$1.json" "$2" "$3" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1])); label = sys.argv[3]
th = {t["tid"]: t for t in d["threads"]}
truth = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
pid = int(open(sys.argv[2] + ".pypid").read())
bad = 0
for tid, vol, invol in truth:
    t = th.get(tid)
    if t is None:
        print("FAIL: %s: python thread %d is not in the report" % (label, tid)); bad += 1; continue
    slack = 2 if tid == pid else 0
    try:
        st = dict(l.split(':', 1) for l in open('/proc/%d/task/%d/status' % (pid, tid)))
        vol, invol, slack = int(st['voluntary_ctxt_switches']), int(st['nonvoluntary_ctxt_switches']), 0
    except OSError:
        pass
    ok = vol <= t["switches_voluntary"] <= vol + slack and invol <= t["switches_involuntary"] <= invol + slack
    print("%s: tid %d voluntary %d / proc %d, involuntary %d / proc %d%s" % (label, tid, t["switches_voluntary"], vol,
          t["switches_involuntary"], invol, "" if ok else "  MISMATCH"))
    bad += not ok
sys.exit(1 if bad else 0)
PY
}

# record_ready TRACE TRUTH ARGS..: `platoon record ARGS -o TRACE` in the background; once it has
# attached, $tmp/go is created (for targets that must start after it); once the python program
# has written TRUTH and gone to sleep for good, Ctrl-C. So the recording holds everything the
# program did, however slowly a busy machine attaches or starts it.
record_ready() {
  local trace=$1 truth=$2; shift 2
  "$platoon" record -i 0.25 --duration 60 -o "$trace" "$@" 2> "$trace.err" & local rec=$!
  for _ in $(seq 300); do grep -q "Ctrl-C to stop" "$trace.err" && break; sleep 0.1; done
  touch "$tmp/go"
  for _ in $(seq 300); do [ -s "$truth" ] && break; sleep 0.1; done
  sleep 0.5
  kill -INT "$rec"; wait "$rec" || { cat "$trace.err"; fail "record $*"; }
  [ -s "$truth" ] || fail "record $*: the python program did not get ready in 30 s"
}

# 1. -- CMD follows forks by default (--keep-running: the program outlives the recording, so
#    its final counts can be read).
record_ready "$tmp/cmd.trace" "$tmp/truth1" --keep-running -- sh -c "python3 $tmp/mt.py $tmp/truth1; true"
check "$tmp/cmd.trace" "$tmp/truth1" "-- CMD" || fail "-- CMD: python's threads"

# 2. --no-follow-forks: the shell only.
"$platoon" record -q -i 0.5 --duration 3 --no-follow-forks -o "$tmp/nf.trace" -- sh -c "python3 $tmp/mt.py $tmp/truth2; true" \
  2> "$tmp/nf.err" || { cat "$tmp/nf.err"; fail "record --no-follow-forks"; }
"$platoon" report "$tmp/nf.trace" --format json > "$tmp/nf.json" || fail "report --no-follow-forks"
n=$(python3 -c "import json,sys; print(len({t['pid'] for t in json.load(open(sys.argv[1]))['threads']}))" "$tmp/nf.json")
echo "--no-follow-forks: $n process(es) in the report"
[ "$n" = 1 ] || fail "--no-follow-forks recorded $n processes, expected the shell only"

# 3. --pid SHELL --follow-forks, and the same with --procfs (children rescanned each interval).
for src in bpf procfs; do
  rm -f "$tmp/go" "$tmp/truth3"
  sh -c "while [ ! -e $tmp/go ]; do sleep 0.05; done; python3 $tmp/mt.py $tmp/truth3; true" & shpid=$!
  extra=(); [ $src = procfs ] && extra=(--procfs)
  record_ready "$tmp/pid-$src.trace" "$tmp/truth3" --pid "$shpid" --follow-forks "${extra[@]}"
  check "$tmp/pid-$src.trace" "$tmp/truth3" "--pid --follow-forks ($src)" || fail "--pid --follow-forks ($src)"
  kill -KILL "$shpid" "$(cat "$tmp/truth3.pypid" 2>/dev/null)" 2>/dev/null; wait "$shpid" 2>/dev/null
done
echo "PASS"
