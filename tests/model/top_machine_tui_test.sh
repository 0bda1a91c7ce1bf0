#!/usr/bin/env bash
# The whole machine in a real terminal: `platoon top` with no target, in tmux at
# 100x30, while two CPU hogs pinned to CPU 1 take turns on it (each runnable half the time, so
# each waits ~50%: the truth is their own /proc/<pid>/schedstat). The process view ranks them
# first by %WAIT; Enter opens a hog's threads, Enter again its detail, Esc goes back up each level.
# Also `top --all --batch` prints the process table with the hogs on top.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/irq_time.sh"
bin=$(cd "$BUILD/bin" && pwd)   # absolute: the dashboard runs in tmux, in $tmp
require_root
require_cmd tmux
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"
use_tmp topmachine
sock=platoon-machine-test-$$
tm() { tmux -L "$sock" "$@"; }
cleanup() { tm kill-server 2>/dev/null; stop_pids 0.1; rm -rf "$tmp"; }
fail() { echo "FAIL: $*"; echo "--- screen:"; tm capture-pane -p -t top 2>/dev/null; exit 1; }
screen() { tm capture-pane -p -t top; }
wait_for() { local end=$((SECONDS + ${2:-10})); while [ $SECONDS -lt $end ]; do screen | grep -Eq -- "$1" && return 0; sleep 0.1; done; return 1; }
keys() { tm send-keys -t top "$@"; }
# The table's rows: the lines under the column header (PID COMMAND.. or TID NAME..).
rows() { screen | awk 'f && /^ *[0-9]+ / { print } / [v^]?[PT]ID [v^]?(COMMAND|NAME) / { f = 1 }'; }
# The pids of the first N process rows, top to bottom.
first_pids() { rows | head -"$1" | awk '{ print $1 }' | tr '\n' ' '; }

# Hogs with a name of their own (comm comes from the name exec'd).
ln -s "$(command -v sh)" "$tmp/hoga"; ln -s "$(command -v sh)" "$tmp/hogb"
taskset -c 1 "$tmp/hoga" -c 'while :; do :; done' & pids+=($!); a=$!
taskset -c 1 "$tmp/hogb" -c 'while :; do :; done' & pids+=($!); b=$!
sleep 0.5
want=$(printf '%s\n' "$a" "$b" | sort -n | tr '\n' ' ')

# 1. --batch: the process table, the hogs first.
"$bin/platoon" top --all --batch -i 1 -n 2 > "$tmp/batch.txt" 2> "$tmp/batch.err" || { cat "$tmp/batch.err"; fail "top --all --batch"; }
grep -q 'all processes' "$tmp/batch.txt" || fail "batch header does not say all processes"
got=$(awk '/PID/ { n++ } n == 2 && /^ *[0-9]+ / { print $1 }' "$tmp/batch.txt" | head -2 | sort -n | tr '\n' ' ')
[ "$got" = "$want" ] || { cat "$tmp/batch.txt"; fail "batch: first two processes are '$got', want the hogs '$want'"; }
echo "batch: hogs $want ranked first"

# 2. The dashboard with no target.
tm -f /dev/null new-session -d -s top -x 100 -y 30 -c "$tmp" \
  "LANG=C.UTF-8 TERM=screen-256color $bin/platoon top; echo TOP-EXIT=\$? > $tmp/rc; sleep 30"
wait_for 'hoga' 15 || fail "no hoga row"
wait_for 'hogb' || fail "no hogb row"
screen | head -1 | grep -q 'all processes' || fail "header does not say all processes"
sleep 2.2   # two full intervals with both hogs in them
s0a=$(awk '{ print $2 }' "/proc/$a/schedstat"); t0=$(date +%s%N)
sleep 1
s1a=$(awk '{ print $2 }' "/proc/$a/schedstat"); t1=$(date +%s%N)
got=$(first_pids 2 | tr ' ' '\n' | sort -n | tr '\n' ' ')
[ "$got" = "$want " ] || [ "$got" = "$want" ] || fail "first two process rows are '$got', want the hogs '$want'"
truth=$(( (s1a - s0a) * 100 / (t1 - t0) ))
row=$(rows | grep -E "^ *$a ")
echo "process view: hogs first; hoga row: $row (schedstat says ~$truth% wait)"
[ "$truth" -ge 30 ] || fail "the hogs do not wait (schedstat ${truth}%): is CPU 1 theirs?"
# PID COMMAND THR %CPU %WAIT: the shown %WAIT against schedstat's over about the same second.
shown=$(echo "$row" | awk '{ printf "%d", $5 }')
[ $((shown - truth)) -le 15 ] && [ $((truth - shown)) -le 15 ] || fail "hoga %WAIT $shown, schedstat says $truth"

# 3. Enter on hoga: its threads; Enter: the detail; Esc, Esc: back up.
keys Home
sel=$(first_pids 1 | tr -d ' ')
keys Enter
wait_for 'TID' || fail "Enter did not open the process's threads"
rows | grep -Eq "^ *$sel +hog[ab]" || fail "the thread table does not show the process's thread $sel"
n=$(rows | wc -l)
[ "$n" = 1 ] || fail "the thread table of a one-thread process shows $n rows"
keys Enter
wait_for 'CPUs|preempted|run-queue|why it waited' || fail "Enter did not open the thread's detail"
# The irq part of its wait is a number only where the kernel accounts IRQ time (decided from the
# kernel's config), and "-" where it does not: never a 0 that looks measured.
wait_for "why it waited" || { screen; fail "the detail has no 'why it waited' section"; }
wait_for "wait [0-9.]+: contended" || { screen; fail "the detail has no wait split"; }
if irq_time_accounted; then want='steal [0-9.]+  irq [0-9]+\.[0-9]  idle exit'; else want='steal [0-9.]+  irq -  idle exit'; fi
screen | grep -Eq -- "$want" || { screen | grep -A1 'contended'; fail "the wait split's irq part is not /$want/"; }
echo "ok detail: $(screen | grep -o 'wait [0-9.]*: contended.*') $(screen | grep -oE 'steal [0-9.]+  irq.*exit [0-9.]+')"
keys Escape
wait_for 'TID' || fail "Esc from the detail did not return to the threads"
keys Escape
wait_for 'THR' || fail "Esc from the threads did not return to the processes"
[ "$(rows | wc -l)" -ge 3 ] || fail "the process view lost its rows"
keys q
for _ in $(seq 50); do [ -f "$tmp/rc" ] && break; sleep 0.1; done
grep -q 'TOP-EXIT=0' "$tmp/rc" 2>/dev/null || fail "top did not exit 0 on q"
echo "PASS: top_machine_tui_test"
