#!/usr/bin/env bash
# platoon record / report from the outside: clear one-line errors on bad input, a 0600 trace
# file, -- CMD launched and followed to its end, --pid targets that exit, Ctrl-C and SIGKILL
# leaving a readable file, the procfs source saying what it lacks, and --no-io attaching no
# epoll program.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp rec
bg=()
cleanup() { for p in "${bg[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
require_root

# 1. Bad input.
expect_error "no such process: 999999" "$platoon" record --pid 999999 -o "$tmp/x.trace"
expect_error "not a pid" "$platoon" record --pid 12,abc -o "$tmp/x.trace"
expect_error "no target" "$platoon" exporter --listen 127.0.0.1:0
expect_error "only one of" "$platoon" record --pid 1 --comm x -o "$tmp/x.trace"
expect_error "only one of" "$platoon" record --all --pid 1 -o "$tmp/x.trace"
expect_error "no such cgroup" "$platoon" record --cgroup /no/such/group -o "$tmp/x.trace"
expect_error "does not apply" "$platoon" record --all --follow-forks -o "$tmp/x.trace"
expect_error "bad --duration" "$platoon" record --pid 1 --duration soon -o "$tmp/x.trace"
expect_error "not a platoon trace" "$platoon" report /etc/passwd
expect_error "no-such-file" "$platoon" report "$tmp/no-such-file"
expect_error "format" "$platoon" report /etc/passwd --format yaml
expect_error "cannot run" "$platoon" record -o "$tmp/x.trace" -- /nonexistent/cmd
"$platoon" --help > /dev/null || fail "--help"
# Outputs go to a file before grep: with pipefail, grep -q leaving early would fail the writer.
"$platoon" record --help > "$tmp/help.txt" || fail "record --help exit status"
grep -q -- "--duration" "$tmp/help.txt" || fail "record --help"

# 2. -- CMD: a shell loop that spins ~0.5 s and then sleeps; recording ends with it.
"$platoon" record -q -i 0.2 -o "$tmp/cmd.trace" -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 0.3' \
  2> "$tmp/cmd.err" || { cat "$tmp/cmd.err"; fail "record -- CMD"; }
mode=$(stat -c %a "$tmp/cmd.trace"); [ "$mode" = 600 ] || fail "trace mode $mode, expected 600"
"$platoon" report "$tmp/cmd.trace" --format json > "$tmp/cmd.json" || fail "report of -- CMD trace"
n=$(json "$tmp/cmd.json" 'len(d["threads"])'); src=$(json "$tmp/cmd.json" 'd["source"]')
cpu=$(json "$tmp/cmd.json" 'max(t["cpu_pct"] for t in d["threads"])')
echo "-- CMD: threads=$n source=$src max cpu=$cpu"
[ "$src" = bpf ] || fail "source $src"
[ "$n" -ge 1 ] || fail "no thread of the command"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 20 else 1)" "$cpu" || fail "the spinning shell shows only $cpu %CPU"
"$platoon" report "$tmp/cmd.trace" > "$tmp/cmd.txt" || fail "text report exit status"
grep -q "source: bpf" "$tmp/cmd.txt" || fail "text report lacks the source line"
grep -qi "lost" "$tmp/cmd.txt" || fail "text report lacks the lost-events line"

# 3. --pid target that exits: recording goes on and says so; Ctrl-C stops it cleanly.
sleep 1 & victim=$!; bg+=($victim)
"$platoon" record -i 0.2 --pid "$victim" -o "$tmp/exit.trace" 2> "$tmp/exit.err" & rec=$!; bg+=($rec)
sleep 2.5
kill -0 "$rec" 2>/dev/null || { cat "$tmp/exit.err"; fail "record stopped when its target exited"; }
grep -q "target $victim exited" "$tmp/exit.err" || { cat "$tmp/exit.err"; fail "no note that the target exited"; }
kill -INT "$rec"; wait "$rec"; st=$?
[ "$st" = 0 ] || { cat "$tmp/exit.err"; fail "record exit status $st after Ctrl-C"; }
grep -q "interrupted" "$tmp/exit.err" || fail "record did not say it was interrupted"
"$platoon" report "$tmp/exit.trace" > "$tmp/exit.txt" || fail "report after Ctrl-C"
grep -q "exited" "$tmp/exit.txt" || { cat "$tmp/exit.txt"; fail "report does not carry the exit note"; }

# 4. SIGKILL mid-recording: the file reads back up to its last complete chunk.
sh -c 'while :; do :; done' & spin=$!; bg+=($spin)
"$platoon" record -q -i 0.1 --pid "$spin" -o "$tmp/kill.trace" 2> /dev/null & rec=$!
sleep 1.5; kill -KILL "$rec"; wait "$rec" 2>/dev/null
"$platoon" report "$tmp/kill.trace" --format json > "$tmp/kill.json" 2> "$tmp/kill.err" || { cat "$tmp/kill.err"; fail "report of a killed recording"; }
grep -qi "truncated\|incomplete\|not finished" "$tmp/kill.err" || { cat "$tmp/kill.err"; fail "report does not say the recording was cut short"; }
cpu=$(json "$tmp/kill.json" 'd["threads"][0]["cpu_pct"]')
echo "killed recording: spinner cpu=$cpu"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 40 else 1)" "$cpu" || fail "spinner shows $cpu %CPU"

# 5. procfs source: same tables, says so and what it lacks.
"$platoon" record -q --procfs -i 0.2 --duration 1 --pid "$spin" -o "$tmp/procfs.trace" || fail "record --procfs"
"$platoon" report "$tmp/procfs.trace" > "$tmp/procfs.txt" || fail "report of procfs trace"
grep -q "source: procfs" "$tmp/procfs.txt" || { cat "$tmp/procfs.txt"; fail "no 'source: procfs'"; }
grep -qi "lacks" "$tmp/procfs.txt" || fail "procfs report does not say what it lacks"
"$platoon" report "$tmp/procfs.trace" --format json > "$tmp/procfs.json" || fail "json"
[ "$(json "$tmp/procfs.json" 'd["source"]')" = procfs ] || fail "json source"

# 6. Without privileges: record falls back to /proc and says why and what to run instead.
if id nobody > /dev/null 2>&1 && command -v setpriv > /dev/null; then
  asnobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
  cp "$platoon" "$tmp/platoon-unpriv"; chmod 755 "$tmp" "$tmp/platoon-unpriv"
  mkdir "$tmp/np"; chown nobody "$tmp/np"
  asnobody sleep 3 & np=$!; bg+=($np)
  sleep 0.2
  asnobody "$tmp/platoon-unpriv" record -i 0.2 --duration 1 --pid "$np" -o "$tmp/np/np.trace" 2> "$tmp/np.err" \
    || { cat "$tmp/np.err"; fail "unprivileged record"; }
  grep -q "run as root" "$tmp/np.err" || { cat "$tmp/np.err"; fail "unprivileged record does not say to run as root"; }
  grep -q "source: procfs" "$tmp/np.err" || fail "unprivileged record does not say it samples /proc"
  echo "ok unprivileged: $(head -1 "$tmp/np.err")"
fi

# 7. --comm: a process started after the recording began is found by name.
cp /bin/sh "$tmp/plspinner"
"$platoon" record -q -i 0.2 --duration 2.5 --comm plspinner -o "$tmp/comm.trace" 2> "$tmp/comm.err" & rec=$!
sleep 0.8
"$tmp/plspinner" -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done'
wait "$rec" || { cat "$tmp/comm.err"; fail "record --comm"; }
"$platoon" report "$tmp/comm.trace" --format json > "$tmp/comm.json" || fail "report of --comm trace"
python3 - "$tmp/comm.json" <<'PY' || fail "--comm recording lacks the late process"
import json, sys
d = json.load(open(sys.argv[1]))
t = [t for t in d["threads"] if t["comm"] == "plspinner"]
print("--comm: plspinner threads", [(x["tid"], round(x["cpu_pct"], 1)) for x in t])
assert t and t[0]["run_ns"] > 10_000_000
PY

# 8. --no-io: the scheduler data without the epoll programs (perf sched's set), said in the report;
# the same loop of epoll waits recorded in full has its cycles.
epoll_loop='import select, time
e = select.epoll(); t = time.time()
while time.time() - t < 1.5: e.poll(0.002)'
for mode in no-io full; do
  flags=(); [ $mode = no-io ] && flags=(--no-io)
  "$platoon" record -i 0.2 "${flags[@]}" -o "$tmp/$mode.trace" -- python3 -c "$epoll_loop" 2> "$tmp/$mode.err" & rec=$!; bg+=($rec)
  # "recording" is said once every program is attached (a sanitized build takes seconds).
  wait_started "$tmp/$mode.err" "recording" "record $mode"
  # This recorder's programs only (their ids from its fds), not another platoon's.
  ids=" $(cat /proc/"$rec"/fdinfo/* 2> /dev/null | awk '/^prog_id:/ { printf "%s ", $2 }')"
  bpftool prog show | awk -v ids="$ids" '/^[0-9]+:/ { id = $1; sub(":", "", id); keep = index(ids, " " id " ") > 0 } keep' \
    > "$tmp/$mode.progs"
  wait "$rec" || { cat "$tmp/$mode.err"; fail "record $mode"; }
  "$platoon" report "$tmp/$mode.trace" --format json > "$tmp/$mode.json" || fail "report of the $mode trace"
done
grep -q ' name switch_' "$tmp/no-io.progs" || fail "--no-io: no switch program attached"
! grep -q ' name epoll' "$tmp/no-io.progs" || { grep epoll "$tmp/no-io.progs"; fail "--no-io: an epoll program attached"; }
grep -q ' name epoll' "$tmp/full.progs" || fail "full record: no epoll program attached"
"$platoon" report "$tmp/no-io.trace" > "$tmp/no-io.txt" || fail "report of the --no-io trace"
grep -q 'lacks: .*io' "$tmp/no-io.txt" || fail "--no-io report does not say it lacks io"
python3 - "$tmp/no-io.json" "$tmp/full.json" <<'PY' || fail "--no-io against a full recording"
import json, sys
noio, full = (json.load(open(f)) for f in sys.argv[1:])
def proc(d): return next(p for p in d["processes"] if p["comm"].startswith("python"))
a, b = proc(noio), proc(full)
print(f"--no-io: switches {a['switches_voluntary']}, io_cycles {a.get('io_cycles')}; full: io_cycles {b.get('io_cycles')}")
assert "io_cycles" not in a and a["switches_voluntary"] > 200
assert b["io_cycles"] > 200
PY

# 9. --vs: two runs side by side.
"$platoon" report "$tmp/kill.trace" --vs "$tmp/procfs.trace" > "$tmp/vs.txt" 2>/dev/null || fail "report --vs"
grep -q "%wait" "$tmp/vs.txt" || { cat "$tmp/vs.txt"; fail "--vs table lacks %wait"; }
echo PASS
