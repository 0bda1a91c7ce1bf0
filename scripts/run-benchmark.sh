#!/usr/bin/env bash
# One benchmark run, modelled on the seed's benchmark-runner/scripts/run-benchmark.sh:
# platoon-mock, a server (platoon-server, or a peer), platoon-load at a fixed rate (or closed
# loop for max TPS), each on its own cpuset, with per-thread scheduling numbers from /proc,
# pidstat, perf stat and perf sched. Every process it starts is stopped on exit and on Ctrl-C.
#
# usage: scripts/run-benchmark.sh [options]
#   --server platoon|nginx|go   what serves /fruits (default platoon; nginx proxies the mock,
#                               i.e. compare it with --passthrough)
#   --mode carrier|pool         platoon-server scheduler (default carrier)
#   --threads N                 carriers / event loops (default 2)
#   --workers N                 pool workers (default: --threads)
#   --ws                        work stealing
#   --pin                       pin carriers to CPUs
#   --poller carrier|master     (default carrier)
#   --passthrough               platoon-server returns the backend body unchanged
#   --idle-spin-us N            platoon-server: idle carriers poll N µs before sleeping
#   --rate R                    fixed rate, req/s (omit for closed loop: max TPS)
#   --connections C             (default 100)
#   --load-threads T            (default 1)
#   --load-cpuset L             (default 0)
#   --server-cpuset L           (default 1)
#   --mock-cpuset L             (default 0)
#   --mock-threads N            (default 1)
#   --mock-think-time MS        (default 1)
#   --warmup S                  (default 5)
#   --duration S                measured seconds after warm-up (default 10)
#   --perf-stat                 perf stat (software counters) on the server for the window
#   --perf-sched                perf sched record on the server for the window
#   --no-pidstat                skip pidstat -u -w -t
#   --record FILE               platoon record of the server for the measured window (trace file
#                               for platoon report / doctor; the recorder runs on --record-cpuset)
#   --record-cpuset L           (default: --load-cpuset, so it stays off a pinned server's CPUs)
#   --requests                  the recording also measures each request (record --requests)
#   --output-dir DIR            (default build/bench/run-<timestamp>)
#   --build DIR                 build directory with bin/ (default build)
set -uo pipefail
script=run-benchmark
# What produced the run, for the reports made from it (the comparison page shows it).
invocation="scripts/run-benchmark.sh $*"
. "$(cd "$(dirname "$0")" && pwd)/lib/common.sh"

server=platoon mode=carrier threads=2 workers= ws= pin= poller=carrier passthrough= rate=
connections=100 load_threads=1 load_cpuset=0 server_cpuset=1 mock_cpuset=0 mock_threads=1
think=1 warmup=5 duration=10 perf_stat= perf_sched= pidstat=1 out= build=build idle_spin=
record= record_cpuset= requests=
options=(
  --server=server --mode=mode --threads=threads --workers=workers --ws+ws --pin+pin --poller=poller
  --passthrough+passthrough --idle-spin-us=idle_spin --rate=rate --connections=connections
  --load-threads=load_threads --load-cpuset=load_cpuset --server-cpuset=server_cpuset
  --mock-cpuset=mock_cpuset --mock-threads=mock_threads --mock-think-time=think --warmup=warmup
  --duration=duration --perf-stat+perf_stat --perf-sched+perf_sched --no-pidstat~pidstat
  --record=record --record-cpuset=record_cpuset --requests+requests --output-dir=out --build=build
)
parse_options "$@"
case $server in platoon|nginx|go) ;; *) die "--server must be platoon, nginx or go" ;; esac
case $mode in carrier|pool) ;; *) die "--mode must be carrier or pool" ;; esac
case $poller in carrier|master) ;; *) die "--poller must be carrier or master" ;; esac
for v in threads connections load_threads mock_threads warmup duration; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--${v//_/-} must be a whole number"
done
[ -z "$rate" ] || [[ $rate =~ ^[0-9]+$ && $rate -gt 0 ]] || die "--rate must be a positive whole number"
bin=$build/bin
here=$(cd "$(dirname "$0")" && pwd)
for b in platoon-mock platoon-load; do [ -x "$bin/$b" ] || die "$bin/$b is missing (run make)"; done
[ "$server" != platoon ] || [ -x "$bin/platoon-server" ] || die "$bin/platoon-server is missing (run make)"
[ -z "$record" ] || [ -x "$bin/platoon" ] || die "$bin/platoon is missing (run make)"
out=${out:-build/bench/run-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || die "cannot create $out"
echo "$invocation" > "$out/command.txt"

trap stop_all EXIT
trap 'echo "run-benchmark: interrupted" >&2; exit 130' INT TERM


cat > "$out/benchmark-config.txt" <<CFG
date=$(date -Is)
host=$(uname -n) kernel=$(uname -r) cpus=$(nproc)
server=$server mode=$mode threads=$threads workers=${workers:-$threads} ws=${ws:-0} pin=${pin:-0} poller=$poller passthrough=${passthrough:-0}
rate=${rate:-max} connections=$connections load_threads=$load_threads
load_cpuset=$load_cpuset server_cpuset=$server_cpuset mock_cpuset=$mock_cpuset mock_threads=$mock_threads mock_think_time_ms=$think
warmup_s=$warmup duration_s=$duration perf_stat=${perf_stat:-0} perf_sched=${perf_sched:-0} pidstat=${pidstat:-0}
record=${record:-none} record_cpuset=${record_cpuset:-$load_cpuset}
CFG

# --- mock
taskset -c "$mock_cpuset" "$bin/platoon-mock" --port 0 --think-time-ms "$think" --threads "$mock_threads" \
  > "$out/mock-output.log" 2>&1 &
mock_pid=$!; pids+=($mock_pid)
mock_port=$(port_of "$out/mock-output.log") || die "platoon-mock did not start (see $out/mock-output.log)"

# --- server
case $server in
  platoon)
    args=(--port 0 --backend "127.0.0.1:$mock_port" --carriers "$threads" --scheduler "$mode" --poller "$poller")
    [ -n "$workers" ] && args+=(--workers "$workers")
    [ -n "$ws" ] && args+=(--work-stealing)
    [ -n "$pin" ] && args+=(--pin)
    [ -n "$passthrough" ] && args+=(--passthrough)
    [ -n "$idle_spin" ] && args+=(--idle-spin-us "$idle_spin")
    taskset -c "$server_cpuset" "$bin/platoon-server" "${args[@]}" > "$out/server-output.log" 2>&1 &
    server_pid=$!; pids+=($server_pid)
    port=$(port_of "$out/server-output.log") || die "platoon-server did not start (see $out/server-output.log)"
    ;;
  nginx)
    port=$(free_port)
    taskset -c "$server_cpuset" "$here/peers/nginx/run-nginx.sh" --port "$port" --backend "127.0.0.1:$mock_port" \
      --workers "$threads" --dir "$out/nginx" > "$out/server-output.log" 2>&1 &
    server_pid=$!; pids+=($server_pid)
    for _ in $(seq 50); do curl -sf --max-time 2 "http://127.0.0.1:$port/fruits" >/dev/null 2>&1 && break; sleep 0.1; done
    ;;
  go)
    [ -x "$bin/go-handoff" ] || "$here/peers/go-handoff/build.sh" "$build" >/dev/null || die "cannot build the Go peer"
    port=$(free_port)
    GOMAXPROCS=$threads taskset -c "$server_cpuset" "$bin/go-handoff" --port "$port" --backend "127.0.0.1:$mock_port" \
      > "$out/server-output.log" 2>&1 &
    server_pid=$!; pids+=($server_pid)
    for _ in $(seq 50); do curl -sf --max-time 2 "http://127.0.0.1:$port/fruits" >/dev/null 2>&1 && break; sleep 0.1; done
    ;;
esac
curl -sf --max-time 10 "http://127.0.0.1:$port/fruits" > "$out/sample-response.json" || die "the server does not answer /fruits (see $out/server-output.log)"
# nginx's master forks workers: measure the whole process tree under the launcher.
server_procs() { echo "$server_pid"; pgrep -P "$server_pid" 2>/dev/null; for c in $(pgrep -P "$server_pid" 2>/dev/null); do pgrep -P "$c"; done; }

# --- load
load_args=(--url "http://127.0.0.1:$port/fruits" --connections "$connections" --threads "$load_threads"
           --duration "$duration" --warmup "$warmup" --latency --json "$out/load-results.json")
[ -n "$rate" ] && load_args+=(--rate "$rate")
taskset -c "$load_cpuset" "$bin/platoon-load" "${load_args[@]}" > "$out/load-results.txt" 2>&1 &
load_pid=$!; pids+=($load_pid)

# --- measurement window: the load's measured part
sleep "$warmup"
snapshot() {  # per thread: pid tid comm utime stime run_ns wait_ns vcsw nvcsw migrations
  for p in $(server_procs); do
    for t in /proc/$p/task/*; do
      read -r rn wn _ < "$t/schedstat" 2>/dev/null || continue
      awk -v p="$p" -v tid="${t##*/}" -v rn="$rn" -v wn="$wn" -v comm="$(tr ' ' '_' < "$t/comm")" \
        -v vc="$(awk '/^voluntary_ctxt_switches/{print $2}' "$t/status")" \
        -v nc="$(awk '/^nonvoluntary_ctxt_switches/{print $2}' "$t/status")" \
        -v mg="$(awk '/^se.nr_migrations/{print $3}' "$t/sched")" \
        '{ sub(/^.*\) /, ""); print p, tid, comm, $12, $13, rn, wn, vc, nc, mg }' "$t/stat"
    done
  done
}
snapshot > "$out/.snap-begin"
[ -n "$pidstat" ] && { pidstat -u -w -t -p "$(server_procs | paste -sd,)" 1 "$duration" > "$out/pidstat.log" 2>&1 & pids+=($!); }
[ -n "$perf_stat" ] && { perf stat -e task-clock,context-switches,cpu-migrations,page-faults -p "$(server_procs | paste -sd,)" \
    -o "$out/perf-stat.txt" -- sleep "$duration" > /dev/null 2>&1 & pids+=($!); }
if [ -n "$record" ]; then
  # The recording covers the measured window only (the recorder's own start-up, about a tenth
  # of a second, is taken from its beginning); it sits on the load's CPUs by default.
  taskset -c "${record_cpuset:-$load_cpuset}" "$bin/platoon" record -q --pid "$(server_procs | paste -sd,)" \
    ${requests:+--requests} --duration "$duration" -o "$record" > "$out/record.log" 2>&1 &
  record_pid=$!; pids+=($record_pid)
fi
[ -n "$perf_sched" ] && { perf sched record -o "$out/perf-sched.data" -p "$(server_procs | paste -sd,)" -- sleep "$duration" \
    > "$out/perf-sched-record.log" 2>&1 & pids+=($!); }
sleep "$duration"
snapshot > "$out/.snap-end"
wait "$load_pid"
if [ -n "$record" ]; then
  wait "$record_pid" || die "platoon record failed (see $out/record.log)"
fi
sleep 0.5

if [ -n "$perf_sched" ] && [ -f "$out/perf-sched.data" ]; then
  tids=$(awk '{print $2}' "$out/.snap-end" | paste -sd'|')
  perf sched timehist -i "$out/perf-sched.data" 2>/dev/null > "$out/perf-sched-timehist.txt"
  # Scheduling events per (thread, CPU), as the seed's perf-sched-distribution.txt, plus shares.
  awk -v tids="$tids" 'NR > 2 { cpu=$2; task=$3; n=split(task, a, /[\[\]\/]/); tid=a[2];
        if (tid ~ ("^(" tids ")$")) { cnt[task" "cpu]++; tot[task]++ } }
       END { for (k in cnt) { split(k, b, " "); printf "%7d %s %s %5.1f%%\n", cnt[k], b[2], b[1], 100*cnt[k]/tot[b[1]] } }' \
    "$out/perf-sched-timehist.txt" | sort -k3,3 -k2,2 > "$out/perf-sched-distribution.txt"
  perf sched timehist -i "$out/perf-sched.data" --migrations 2>/dev/null | grep migrated > "$out/perf-sched-migrations.txt"
fi

python3 "$here/bench_summary.py" "$out" "$duration" > "$out/summary.json" || die "summary failed"
cat "$out/summary.json"
