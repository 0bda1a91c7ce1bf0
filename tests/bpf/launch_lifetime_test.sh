#!/usr/bin/env bash
# -- CMD ends with platoon: whatever stops record, top, doctor or the
# exporter first (its duration, SIGINT, SIGTERM, SIGHUP, SIGKILL, a write error, a crash by
# SIGSEGV or SIGABRT), the command's whole process group is gone when platoon is, SIGKILL
# follows a SIGTERM it ignores after --kill-after, --keep-running leaves it, and a platoon killed
# while attaching never lets the command start at all.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
platoon=$(realpath "$platoon")   # the test runs in $tmp
use_tmp life
bg=()
cleanup() {
  for p in "${bg[@]}"; do kill -KILL "$p"; done 2>/dev/null
  for f in "$tmp"/*.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
  wait 2>/dev/null; rm -rf "$tmp"
}
require_root
cd "$tmp"

# alive PID: exists and is not a zombie.
alive() { [ -r "/proc/$1/stat" ] && ! awk 2>/dev/null '{ s = $0; sub(/.*\) /, "", s); exit !(substr(s, 1, 1) == "Z") }' "/proc/$1/stat"; }
# group_left PGID: the group's members still alive. A zombie is not: once platoon is gone its
# dead children wait for whoever inherited them (pid 1 here) to reap them, and pgrep lists those.
group_left() {
  local want=$1 f st
  for f in /proc/[0-9]*/stat; do
    st=$(cat "$f" 2> /dev/null) || continue
    set -- ${st##*) }   # state ppid pgrp ...
    [ "$3" = "$want" ] && [ "$1" != Z ] && printf '%s ' "${f//[^0-9]/}"
  done
  return 0
}
# wait_file F: up to 5 s for a pid file the command writes once it runs.
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }
# gone_within S PID..: every PID ends within S seconds.
gone_within() {
  local s=$1; shift
  for _ in $(seq $((s * 20))); do
    local any=0
    for p in "$@"; do alive "$p" && any=1; done
    [ $any = 0 ] && return 0
    sleep 0.05
  done
  return 1
}
# The command: a shell (the group leader) with a background sleep, both pids written down.
CMD=(sh -c 'sleep 61 & echo $! > kid.pid; echo $$ > leader.pid; wait')

start_case() { rm -f leader.pid kid.pid; }
check_gone() {  # WHAT: the leader and its child are gone (at most 1 s after platoon itself)
  wait_file leader.pid && wait_file kid.pid || fail "$1: the command never ran"
  local l k; l=$(cat leader.pid); k=$(cat kid.pid)
  gone_within 1 "$l" "$k" || fail "$1: the command (pid $l) or its child (pid $k) outlived platoon"
  echo "ok $1: leader $l and child $k ended with platoon"
}

# 1. --duration ends record: the command does not run on.
start_case
"$platoon" record -q --duration 1 -o d.trace -- "${CMD[@]}" || fail "record --duration"
check_gone "record --duration"

# 2. Signals to platoon: SIGINT, SIGTERM, SIGHUP, each to record, top --batch, doctor, exporter.
for sig in INT TERM HUP; do
  for cmd in record top doctor exporter; do
    start_case
    case $cmd in
      record) args=(record -q -o "s-$sig.trace") ;;
      top) args=(top --batch -i 0.5) ;;
      doctor) args=(doctor --duration 30) ;;
      exporter) args=(exporter --listen 127.0.0.1:0) ;;
    esac
    "$platoon" "${args[@]}" -- "${CMD[@]}" > "$cmd.out" 2>&1 & p=$!; bg+=($p)
    # leader.pid is written last: a signal before it would end the shell before it wrote it.
    wait_file leader.pid || { cat "$cmd.out"; fail "$cmd: the command never started"; }
    kill -"$sig" "$p"
    gone_within 8 "$p" || fail "$cmd did not end on SIG$sig"
    wait "$p" 2>/dev/null
    check_gone "$cmd SIG$sig"
  done
done

# 3. A command that ignores SIGTERM gets SIGKILL after --kill-after, and platoon says so.
rm -f ign.pid
"$platoon" record -q --duration 0.5 --kill-after 0.5 -o ign.trace -- \
  sh -c 'trap "" TERM; echo $$ > ign.pid; while :; do sleep 0.05; done' 2> ign.err
wait_file ign.pid || fail "the TERM-ignoring command never ran"
gone_within 1 "$(cat ign.pid)" || fail "a command ignoring SIGTERM survived --kill-after"
grep -q "SIGKILL" ign.err || { cat ign.err; fail "no word that SIGKILL was needed"; }
echo "ok --kill-after: $(grep SIGKILL ign.err)"

# 4. --keep-running: the command goes on, and platoon says where it is.
start_case
"$platoon" record -q --duration 0.5 --keep-running -o keep.trace -- "${CMD[@]}" 2> keep.err || fail "record --keep-running"
wait_file kid.pid || fail "--keep-running: the command never ran"
sleep 0.5
alive "$(cat leader.pid)" && alive "$(cat kid.pid)" || fail "--keep-running did not keep the command running"
grep -q "running" keep.err || { cat keep.err; fail "--keep-running: no note where the command is"; }
kill -KILL "$(cat kid.pid)" "$(cat leader.pid)"
echo "ok --keep-running: $(cat keep.err)"

# 5. platoon SIGKILLed while recording: the command (its direct child) gets PR_SET_PDEATHSIG.
rm -f pd.pid
"$platoon" record -q -o pd.trace -- sh -c 'echo $$ > pd.pid; exec sleep 62' & p=$!; bg+=($p)
wait_file pd.pid || fail "pdeathsig: the command never ran"
sleep 0.3; kill -KILL "$p"; wait "$p" 2>/dev/null
gone_within 2 "$(cat pd.pid)" || fail "a SIGKILLed platoon left its command running"
echo "ok SIGKILL of platoon: command $(cat pd.pid) ended too"

# 6. platoon killed while attaching (between fork and the go byte): the command never starts.
# The child waits in platoon's image until released; it is caught there and platoon is killed.
caught=0
for attempt in $(seq 10); do
  rm -f ran
  "$platoon" record -q --duration 1 -o attach.trace -- sh -c 'touch ran' & p=$!
  child=
  for _ in $(seq 400); do
    child=$(cat "/proc/$p/task/$p/children" 2>/dev/null | awk '{print $1}')
    [ -n "$child" ] && break
    sleep 0.005
  done
  if [ -n "$child" ] && [ "$(readlink "/proc/$child/exe")" = "$platoon" ]; then
    kill -KILL "$p"; wait "$p" 2>/dev/null
    caught=1
    # A loaded machine may take a moment to run the child's exit: poll rather than sleep once.
    gone_within 5 "$child" || fail "the held child $child outlived platoon by 5 s"
    [ -e ran ] && fail "killed during attach, platoon still let the command run (attempt $attempt)"
    echo "ok killed during attach: held child $child exited without running the command"
    break
  fi
  wait "$p" 2>/dev/null
done
[ $caught = 1 ] || fail "never caught platoon between fork and release in 10 attempts"

# 7. A write error ends record: the command goes with it (a 16 KB file size limit, reached in
# about three seconds at -i 0.05).
start_case
( ulimit -f 16; exec "$platoon" record -q -i 0.05 -o big.trace -- sh -c 'sleep 61 & echo $! > kid.pid; echo $$ > leader.pid; while :; do :; done' ) 2> big.err
st=$?
# Status 1 and the kernel's word for it: a crash in the write-error path is no pass.
[ "$st" = 1 ] && grep -q 'File too large' big.err || { cat big.err; fail "record did not fail on EFBIG (status $st)"; }
check_gone "record write error"

# 8. platoon crashes (SIGSEGV, SIGABRT) while recording: the command's whole process group goes
# with it, not only the leader that PR_SET_PDEATHSIG reaches, and platoon still dies of the
# signal. No core file: the test sends the signal itself.
for sig in SEGV ABRT; do
  start_case
  ( ulimit -c 0; exec "$platoon" record -q -o "crash-$sig.trace" -- "${CMD[@]}" ) 2> "crash-$sig.err" & p=$!; bg+=($p)
  wait_file kid.pid && wait_file leader.pid || { cat "crash-$sig.err"; fail "SIG$sig: the command never started"; }
  pgid=$(cat leader.pid)
  [ "$(ps -o pgid= -p "$(cat kid.pid)" | tr -d ' ')" = "$pgid" ] || fail "SIG$sig: the child is not in the leader's group"
  kill -"$sig" "$p"
  gone_within 5 "$p" || fail "platoon did not end on SIG$sig"
  wait "$p" 2>/dev/null; st=$?
  [ "$st" = $((128 + $(kill -l "$sig"))) ] || fail "SIG$sig: platoon exited $st, not by the signal"
  for _ in $(seq 20); do [ -z "$(group_left "$pgid")" ] && break; sleep 0.05; done
  left=$(group_left "$pgid")
  [ -z "$left" ] || fail "SIG$sig: the command's group $pgid outlived platoon by 1 s: $left"
  check_gone "record SIG$sig"
done

echo PASS
