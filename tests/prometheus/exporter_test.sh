#!/usr/bin/env bash
# platoon exporter: scraped twice a second apart while a platoon-server (2 carriers) runs under
# fixed-rate load, the carrier series exist and move; promtool finds nothing to say about the
# exposition; / and unknown paths; SIGTERM ends it with 0; a target that keeps creating and
# destroying threads does not grow the series beyond --max-threads; --no-io loads no epoll
# program and exports no epoll family; -- CMD ends with the command;
# bad --listen and a taken port give one-line errors.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
require_root
[ -x /usr/bin/promtool ] || skip "needs promtool (Debian's prometheus package)"
require_cmd curl
use_tmp exporter
# exporter_error STATUS ARGS..: that exit status and exactly one line on stderr, "platoon exporter: ...".
exporter_error() { local want=$1; shift
                   expect_error --status "$want" '^platoon exporter: ' timeout 10 "$platoon" exporter "$@"; }
# val FILE METRIC THREAD [LABEL]: the sum of METRIC's samples for thread THREAD (and LABEL) in FILE.
val() { awk -v m="$2{" -v t="thread=\"$3\"" -v l="${4:-}" \
          'index($1, m) == 1 && index($1, t) && index($1, l) { s += $2; n++ } END { if (n) printf "%.9f\n", s }' "$1"; }
promtool_clean() { promtool check metrics < "$1" > "$tmp/promtool.out" 2>&1; local st=$?
                   echo "promtool check metrics ($(grep -c '^[a-z]' "$1") series): status $st, said: '$(cat "$tmp/promtool.out")'"
                   [ "$st" = 0 ] && [ ! -s "$tmp/promtool.out" ] || fail "promtool is not satisfied with $1"; }

# ---- bad input ----
exporter_error 2 --pid 1 --listen foo
exporter_error 2 --pid 1 --listen :99999
exporter_error 2 --pid 1 --listen '1.2.3.4:x'
exporter_error 1 --pid 1 --listen 192.0.2.1:9464      # not an address of this machine
exporter_error 2 --pid 999999999

# ---- a platoon-server under load ----
start_mock
start_server --carriers 2
start_load --rate 2000 --connections 50 --threads 1 --duration 30

start_exporter "$tmp/exp.log" --pid "$spid"
cat "$tmp/exp.log"
url="http://127.0.0.1:$eport"
exporter_error 1 --pid "$spid" --listen "127.0.0.1:$eport"   # the port is taken now
grep -q 'in use' "$tmp/err" || fail "a taken port does not say so"
sleep 0.5
ctype=$(curl -sf -o "$tmp/s1" -w '%{content_type}' "$url/metrics") || fail "first scrape"
sleep 1
curl -sf "$url/metrics" > "$tmp/s2" || fail "second scrape"
echo "content type: $ctype"
case "$ctype" in "text/plain; version=0.0.4"*) ;; *) fail "content type '$ctype'" ;; esac

for c in carrier-0 carrier-1; do
  for m in platoon_thread_run_seconds_total platoon_thread_switches_total platoon_thread_wait_seconds_total \
           platoon_thread_epoll_events_per_cycle_count platoon_thread_drain_queue_depth_count; do
    a=$(val "$tmp/s1" $m $c); b=$(val "$tmp/s2" $m $c)
    [ -n "$a" ] && [ -n "$b" ] || { grep "thread=\"$c\"" "$tmp/s2" | head -5; fail "$c: no $m"; }
    echo "$c $m: $a -> $b"
    case $m in
      *wait*) awk -v a="$a" -v b="$b" 'BEGIN { exit !(b >= a) }' || fail "$c: $m went down" ;;
      *) awk -v a="$a" -v b="$b" 'BEGIN { exit !(b > a) }' || fail "$c: $m did not move between scrapes" ;;
    esac
  done
  grep -qE "^platoon_thread_runqueue_latency_seconds_bucket\{pid=\"$spid\",process=\"platoon-server\",thread=\"$c\",tid=\"[0-9]+\",le=\"\+Inf\"\} " "$tmp/s2" \
    || fail "$c: no run-queue histogram with pid, process, thread and tid labels"
done
grep -q '^platoon_exporter_source_info{source="bpf"' "$tmp/s2" || fail "source is not bpf"
grep -qE '^platoon_collector_lost_events_total [0-9]' "$tmp/s2" || fail "losses not shown"
promtool_clean "$tmp/s2"

code=$(curl -s -o "$tmp/index" -w '%{http_code}' "$url/"); [ "$code" = 200 ] || fail "/ answered $code"
grep -q 'href="/metrics"' "$tmp/index" || fail "/ does not link /metrics"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/nope"); [ "$code" = 404 ] || fail "/nope answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url/metrics"); [ "$code" -ge 400 ] || fail "POST answered $code"
# A client that connects and says nothing does not stop others from being served.
exec 3<>"/dev/tcp/127.0.0.1/$eport"
curl -sf -m 5 "$url/metrics" > /dev/null || fail "a silent client blocks scrapes"
exec 3>&-

kill -TERM "$exporter"
for _ in $(seq 40); do kill -0 "$exporter" 2>/dev/null || break; sleep 0.05; done
kill -0 "$exporter" 2>/dev/null && fail "exporter still running 2 s after SIGTERM"
wait "$exporter"; st=$?; [ "$st" = 0 ] || fail "exit status $st after SIGTERM"

# --comm finds the same server by name.
start_exporter "$tmp/comm.log" --comm platoon-server
sleep 0.3
curl -sf "http://127.0.0.1:$eport/metrics" > "$tmp/comm" || fail "--comm scrape"
grep -qE "^platoon_thread_run_seconds_total\{pid=\"$spid\",process=\"platoon-server\",thread=\"carrier-0\"" "$tmp/comm" \
  || fail "--comm platoon-server: no carrier-0 of $spid"
kill -TERM "$exporter"; wait "$exporter"

# --procfs: fewer families (no histograms), still valid, and it says what it lacks.
start_exporter "$tmp/procfs.log" --pid "$spid" --procfs
curl -sf "http://127.0.0.1:$eport/metrics" > "$tmp/procfs" || fail "--procfs scrape"
grep -q '^platoon_exporter_source_info{source="procfs",attach_mode="procfs",lacks="[a-z]' "$tmp/procfs" \
  || fail "--procfs: source_info does not say what it lacks"
[ -n "$(val "$tmp/procfs" platoon_thread_run_seconds_total carrier-1)" ] || fail "--procfs: no carrier-1"
promtool_clean "$tmp/procfs"
kill -TERM "$exporter"; wait "$exporter"

# --no-io: no epoll program attached, no epoll family, the scheduler's still there, and the
# source says it lacks io.
start_exporter "$tmp/noio.log" --pid "$spid" --no-io
sleep 0.3
curl -sf "http://127.0.0.1:$eport/metrics" > "$tmp/noio" || fail "--no-io scrape"
bpftool prog show > "$tmp/noio.progs"
! grep -q ' name epoll' "$tmp/noio.progs" || fail "--no-io: an epoll program is attached"
! grep -q '^platoon_thread_epoll' "$tmp/noio" || fail "--no-io: epoll series exported"
[ -n "$(val "$tmp/noio" platoon_thread_run_seconds_total carrier-0)" ] || fail "--no-io: no carrier-0 run time"
grep -q '^platoon_exporter_source_info{source="bpf",.*lacks="[a-z,]*io' "$tmp/noio" || fail "--no-io: source_info does not say it lacks io"
promtool_clean "$tmp/noio"
kill -TERM "$exporter"; wait "$exporter"
echo "ok --no-io: no epoll program or series"

# ---- thread churn: 10 sleeping threads plus 20 short-lived ones at a time, --max-threads 5 ----
python3 -c '
import threading, time
for _ in range(10): threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
while True:
    ts = [threading.Thread(target=lambda: sum(range(3000))) for _ in range(20)]
    [t.start() for t in ts]; [t.join() for t in ts]; time.sleep(0.002)
' & churn=$!; pids+=($churn)
sleep 0.3
start_exporter "$tmp/churn.log" --pid "$churn" --max-threads 5
most=0; first=0
for i in 1 2 3 4 5 6; do
  sleep 0.5
  curl -sf "http://127.0.0.1:$eport/metrics" > "$tmp/c$i" || fail "churn scrape $i"
  series=$(grep -c '^platoon_' "$tmp/c$i")
  threads=$(grep -c '^platoon_thread_run_seconds_total{' "$tmp/c$i")
  exited=$(awk '$1 ~ /^platoon_exited_threads_total\{/ { print $2 }' "$tmp/c$i")
  over=$(awk '$1 == "platoon_exporter_threads_over_limit" { print $2 }' "$tmp/c$i")
  echo "churn scrape $i: $series series, $threads threads exported, $over over the limit, $exited exited so far"
  [ "$threads" -le 5 ] || fail "more than --max-threads threads exported"
  [ "$i" = 1 ] && first=$series
  [ "$series" -gt "$most" ] && most=$series
done
[ "${exited%.*}" -ge 200 ] || fail "only $exited threads exited: the churn did not churn"
[ "${over%.*}" -ge 5 ] || fail "no threads over the limit ($over)"
[ "$most" -le $((first + 40)) ] || fail "series grew from $first to $most under churn"
promtool_clean "$tmp/c6"
kill -TERM "$exporter"; wait "$exporter"

# ---- a thread name the kernel cut inside a character: still valid UTF-8 for Prometheus ----
python3 -c '
import ctypes, time
ctypes.CDLL(None).prctl(15, "ab\u20ac\u20ac\u20ac\u20ac\u20ac".encode(), 0, 0, 0)  # 17 bytes: 15 kept
time.sleep(30)
' & named=$!; pids+=($named)
# Until python has run its prctl the process is still the shell's fork (a busy machine can
# take a while): wait for the name itself.
for _ in $(seq 200); do [ "$(head -c 2 "/proc/$named/comm" 2>/dev/null)" = ab ] && break; sleep 0.05; done
start_exporter "$tmp/named.log" --pid "$named"
curl -sf "http://127.0.0.1:$eport/metrics" > "$tmp/named" || fail "named scrape"
grep -q 'thread="ab€€€€?"' "$tmp/named" || { grep run_seconds "$tmp/named"; fail "the cut name is not shown as ab€€€€?"; }
promtool_clean "$tmp/named"
kill -TERM "$exporter"; wait "$exporter"
kill "$named"

# ---- -- CMD: the exporter ends when the command does ----
timeout 20 "$bin/platoon" exporter --listen 127.0.0.1:0 -- sleep 1 2> "$tmp/cmd.log"; st=$?
cat "$tmp/cmd.log"
[ "$st" = 0 ] || fail "exporter -- sleep 1: status $st"
grep -q 'command exited' "$tmp/cmd.log" || fail "no 'command exited'"
echo PASS
