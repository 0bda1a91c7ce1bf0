#!/usr/bin/env bash
# platoon top used as a person would, in a real terminal: tmux at 80x24 runs the dashboard
# against a platoon-server (master poller, 2 carriers) under load; keys go in with send-keys and
# the screen comes back with capture-pane. Covers rows, IO cycles, navigation, sort, filter,
# detail, help, resize, recording with r, replay of that recording, and quit.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
bin=$(cd "$BUILD/bin" && pwd)   # absolute: the dashboard runs in tmux, in $tmp
require_root
require_cmd tmux
use_tmp toptui
sock=platoon-top-test-$$
tm() { tmux -L "$sock" "$@"; }
cleanup() { tm kill-server 2>/dev/null; stop_pids; rm -rf "$tmp"; }
fail() { echo "FAIL: $*"; echo "--- screen:"; tm capture-pane -p -t top 2>/dev/null; exit 1; }
screen() { tm capture-pane -p -t top; }
# wait_for REGEX [seconds]: poll the pane until it shows REGEX.
wait_for() { local end=$((SECONDS + ${2:-10})); while [ $SECONDS -lt $end ]; do screen | grep -Eq -- "$1" && return 0; sleep 0.1; done; return 1; }
wait_gone() { local end=$((SECONDS + ${2:-10})); while [ $SECONDS -lt $end ]; do screen | grep -Eq -- "$1" || return 0; sleep 0.1; done; return 1; }
# The thread names of the table rows, top to bottom.
rows_order() { screen | grep -E '^ *[0-9]+ ' | grep -oE 'carrier-0|carrier-1|master-poller' | tr '\n' ' '; }
keys() { tm send-keys -t top "$@"; }
# column NAME THREAD: the value under header NAME in THREAD's row (columns are fixed width).
column() { screen | python3 -c '
import sys
lines = sys.stdin.read().splitlines(); name, thread = sys.argv[1], sys.argv[2]
hdr = next(l for l in lines if "TID" in l and "NAME" in l)
end = hdr.index(name) + len(name)
row = next(l for l in lines if l.split()[:2][1:] == [thread] and l.split()[0].isdigit())
start = hdr.rfind(" ", 0, hdr.index(name)) + 1
print(row[start:end].strip())' "$1" "$2"; }

start_mock
start_server --carriers 2 --poller master
start_load --rate 2000 --connections 50 --threads 1 --duration 60

tm -f /dev/null new-session -d -s top -x 80 -y 24 -c "$tmp" \
  "LANG=C.UTF-8 TERM=screen-256color $bin/platoon top --pid $spid; echo TOP-EXIT=\$? > $tmp/rc; sleep 30"
wait_for 'master-poller' 15 || fail "no master-poller row"
wait_for 'carrier-0' || fail "no carrier-0 row"
wait_for 'carrier-1' || fail "no carrier-1 row"
screen | grep -q 'source bpf' || fail "header does not say source bpf"
screen | grep -q 'queue depth at drain: carrier-0' || fail "no carriers' queue depth in the header"
for t in carrier-0 carrier-1 master-poller; do
  v=$(column cyc/s "$t"); [ -n "$v" ] && [ "$v" != 0 ] && [ "$v" != - ] || fail "$t: IO cycles/s is '$v'"
  echo "$t: cyc/s $v"
done
[ "$(screen | wc -l)" -le 24 ] || fail "more than 24 lines"

# Sort: one column left of %CPU is NAME (ascending), i inverts it.
keys '<'; wait_for '\^NAME' || fail "sort column did not move to NAME"
order=$(rows_order)
[ "$order" = "carrier-0 carrier-1 master-poller " ] || fail "NAME ascending gave: $order"
keys i; wait_for 'vNAME' || fail "i did not invert the sort"
order=$(rows_order)
[ "$order" = "master-poller carrier-1 carrier-0 " ] || fail "NAME descending gave: $order"

# Navigation + detail: the last row (G) opens as carrier-0 (names descending).
keys G Enter; wait_for 'epoll events per cycle' || fail "Enter did not open the detail"
screen | sed -n 4p | grep -q 'carrier-0' || fail "detail is not of the selected (last) row"
for s in 'queue depth at drain' 'run-queue latency' 'CPUs \(share' 'preempted by' 'woken by' 'history'; do
  screen | grep -Eq "$s" || fail "detail lacks '$s'"
done
keys Escape; wait_for 'TID +[v^]?NAME' || fail "Esc did not return to the table"
keys k k Enter; wait_for 'epoll events per cycle' || fail "detail after k k"
screen | sed -n 4p | grep -q 'master-poller' || fail "k k did not select the first row"
keys Escape; wait_for 'TID +[v^]?NAME' || fail "Esc"

# Filter.
keys / c a r r; wait_for 'filter: carr_' || fail "/ did not start the filter"
keys Enter; wait_gone 'master-poller +[0-9]' || fail "filter kept master-poller"
screen | grep -q carrier-1 || fail "filter lost carrier-1"
keys Escape; wait_for 'master-poller +[0-9]' || fail "Esc did not clear the filter"

# Help, generated from the key map.
keys '?'; wait_for 'platoon top: keys' || fail "? did not open help"
screen | grep -q 'invert the sort order' || fail "help lacks i"
keys '?'; wait_gone 'platoon top: keys' || fail "? did not close help"

# Resize: wider shows the columns 80 had no room for; back to 80x24 drops them again.
tm resize-window -t top -x 120 -y 30
wait_for 'nvcs/s' || fail "no nvcs/s column at 120 columns"
wait_for 'mig/s' || fail "no mig/s column at 120 columns"
tm resize-window -t top -x 80 -y 24
wait_gone 'nvcs/s' || fail "resize back to 80 did not redraw"
[ "$(screen | wc -l)" -le 24 ] || fail "more than 24 lines after resize"

# Interval and sparkline keys.
keys -; wait_for 'every 2s' || fail "- did not lengthen the interval"
keys + +; wait_for 'every 0.5s' || fail "+ did not shorten the interval"
keys -; wait_for 'every 1s' || fail "- did not go back to 1 s"
keys w; wait_for 'HIST %cpu' || fail "w did not switch the sparkline to %CPU"
keys w; wait_for 'HIST %wait' || fail "w did not switch back"

# Pause, then record a few intervals with r.
keys ' '; wait_for '\[PAUSED\]' || fail "space did not pause"
keys ' '; wait_gone '\[PAUSED\]' || fail "space did not resume"
keys r; wait_for 'REC platoon-top-.*\.trace' || fail "r did not start recording"
wait_for 'REC platoon-top-.*\(4\)' 10 || fail "recording did not grow"
keys r; wait_for 'saved platoon-top-.*\.trace' || fail "r did not stop recording"
trace=$(ls "$tmp"/platoon-top-*.trace | head -1); [ -s "$trace" ] || fail "no trace file"
[ "$(stat -c %a "$trace")" = 600 ] || fail "top's recording is mode $(stat -c %a "$trace"), not 600"
sum=$(md5sum < "$trace")
# r r r r at once: two recordings within one second get two names; none replaces another.
keys r r r r
for _ in $(seq 50); do [ "$(ls "$tmp"/platoon-top-*.trace | wc -l)" -ge 3 ] && screen | grep -q 'saved' && break; sleep 0.1; done
sleep 0.3
n=$(ls "$tmp"/platoon-top-*.trace | wc -l)
[ "$n" = 3 ] || fail "three recordings left $n files: $(ls "$tmp")"
[ "$(md5sum < "$trace")" = "$sum" ] || fail "a later recording changed the first one"
echo "r twice within a second: $(cd "$tmp" && ls platoon-top-*.trace | tr '\n' ' ')"

keys q
for _ in $(seq 50); do [ -f "$tmp/rc" ] && break; sleep 0.1; done
grep -q 'TOP-EXIT=0' "$tmp/rc" 2>/dev/null || fail "q did not quit with status 0"
echo "recorded $(basename "$trace"); live view OK"

# Replay of the recording: the same threads, position and step keys.
tm kill-session -t top
tm new-session -d -s top -x 80 -y 24 "LANG=C.UTF-8 $bin/platoon top --replay $trace; sleep 30"
wait_for 'replay [0-9]+/' || fail "replay did not start"
for t in carrier-0 carrier-1 master-poller; do screen | grep -q "$t" || fail "replay lacks $t"; done
keys ' ' ; wait_for '\[PAUSED\]' || fail "replay pause"
pos=$(screen | grep -oE 'replay [0-9]+' | grep -oE '[0-9]+')
keys ','; [ "$pos" -gt 1 ] && { wait_for "replay $((pos - 1))/" || fail "',' did not step back"; pos=$((pos - 1)); }
keys '.'; wait_for "replay $((pos + 1))/" || fail "'.' did not step forward"
keys +; wait_for 'x2 ' || fail "+ did not speed up the replay"
keys - -; wait_for 'x0.5 ' || fail "- did not slow down the replay"
keys q; wait_gone 'replay [0-9]' || fail "q did not quit the replay"
echo PASS
