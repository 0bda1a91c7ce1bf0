#!/usr/bin/env bash
# What each tracer costs the traced server's CPU per request at a fixed rate, resolved to a few
# tenths of a point (bench-tracing-overhead.sh's 90% intervals are 4-5 points wide). Differences
# from that benchmark, each removing a source of noise it measured:
#   - one load generator runs the whole time at --rate: no connection set-up, warm-up or
#     max-TPS phase between the measured windows;
#   - each window opens --settle seconds after the tracer is attached and lasts --duration; its
#     requests are the server's own count (GET /metrics) and its CPU its threads' schedstat;
#   - build/bin/speedometer on the server's CPU times the same 0.1 ms of work every 20 ms: the
#     CPU's speed in that window (a VM's CPUs can change speed by several percent from minute to
#     minute, unseen by steal time); each window's CPU per request is also given divided by it;
#   - the summary (scripts/observer_cpu_summary.py) is the 10%-trimmed mean of the per-round
#     paired changes with its 90% bootstrap interval, and a control: the speedometer's own change
#     under each tracer (a tracer that slowed it would hide part of its cost in the adjustment).
# Conditions rotate within each round. Also per request: carrier cycles (polls) and sleeps, to
# show whether a tracer changes how requests batch.
#
# usage: scripts/bench-observer-cpu.sh [BUILD_DIR] [--rounds N] [--duration S] [--settle S]
#                                     [--rate R] [--conditions none,top,..]
#   (conditions as scripts/lib/tracers.sh lists them; floor is bench/hook_floor's do-nothing
#   programs on the same hooks, the price of the hooks alone; default
#   none,floor,top,exporter,platoon,perf)
#   CPUs: server (one carrier) and speedometer on CPU 1; mock, load and tracers on CPU 0.
# Writes BUILD_DIR/bench/observer-cpu.json and prints a table.
set -euo pipefail
script=bench-observer-cpu
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/common.sh"
build=build
[ $# -gt 0 ] && [[ $1 != --* ]] && { build=$1; shift; }
rounds=30 duration=5 settle=2 rate=5000 condition_list=none,floor,top,exporter,platoon,perf
options=(--rounds=rounds --duration=duration --settle=settle --rate=rate --conditions=condition_list)
parse_options "$@"
source "$here/lib/tracers.sh"
IFS=, read -ra conditions <<< "none,${condition_list#none,}"
for c in "${conditions[@]}"; do
  [[ " ${tracer_conditions[*]} " == *" $c "* ]] || die "unknown condition $c"
done
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 2 ]] || die "--rounds needs a whole number >= 2, got $rounds"
[[ $rate =~ ^[0-9]+$ && $rate -ge 1 ]] || die "--rate needs a whole number of requests per second, got $rate"
for v in "$duration" "$settle"; do [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--duration and --settle need seconds, got $v"; done
bin=$build/bin
out=$build/bench/observer-cpu
[ "$(id -u)" = 0 ] || die "needs root"
for b in speedometer hook_floor; do [ -x "$bin/$b" ] || die "$bin/$b not built (make BUILD=$build)"; done
rm -rf "$out"; mkdir -p "$out"
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
# Everything started here is stopped on every exit (stop_all: SIGINT, then SIGKILL, since a
# background job of a non-interactive shell ignores SIGINT); a tracer still attached is in pids.
tracer_pid=
trap 'set +e; pids+=($tracer_pid); stop_all' EXIT
trap 'exit 130' INT TERM

taskset -c 0 "$bin/platoon-mock" --port 0 --think-time-ms 1 --threads 1 > "$out/mock.log" 2>&1 & pids+=($!)
mport=$(port_of "$out/mock.log") || die "the mock did not start"
taskset -c 1 "$bin/platoon-server" --port 0 --backend "127.0.0.1:$mport" --carriers 1 --backend-connections 256 > "$out/server.log" 2>&1 & spid=$!; pids+=($spid)
sport=$(port_of "$out/server.log") || die "the server did not start"
"$bin/speedometer" --cpu 1 --out "$out/speed.txt" & pids+=($!)
url="http://127.0.0.1:$sport/fruits"
taskset -c 0 "$bin/platoon-load" --url "$url" --rate 2000 --connections 50 --threads 1 --duration 2 > /dev/null  # warm
taskset -c 0 "$bin/platoon-load" --url "$url" --rate "$rate" --connections 64 --threads 1 --duration 1000000 > "$out/load.log" 2>&1 & load=$!; pids+=($load)
sleep 2

# One line per look: realtime ns, server CPU s, then requests, cycles, sleeps of its /metrics.
look() {
  local t s m
  t=$(date +%s%N); s=$(server_seconds "$spid")
  m=$(curl -fsS --max-time 10 "http://127.0.0.1:$sport/metrics" | awk '
    /^platoon_requests_total/ { q += $NF } /^platoon_carrier_cycles_total/ { c += $NF }
    /^platoon_carrier_sleeps_total/ { z += $NF } END { printf "%d %d %d", q, c, z }')
  echo "$t $s $m"
}
n=${#conditions[@]}
for r in $(seq "$rounds"); do
  for i in $(seq 0 $((n - 1))); do
    c=${conditions[$(( (i + r - 1) % n ))]}
    start_tracer "$c" "$r"
    sleep "$settle"
    { look; sleep "$duration"; look; } > "$out/window-$c-$r"
    stop_tracer "$c" "$r"
    kill -0 "$load" 2>/dev/null || die "the load generator stopped: its log is $out/load.log"
    echo "round $r $c: $(awk 'NR == 1 { s = $2; q = $3 } NR == 2 { printf "%.1f us/request", ($2 - s) * 1e6 / ($3 - q) }' "$out/window-$c-$r")"
  done
done

python3 "$here/observer_cpu_summary.py" "$build/bench/observer-cpu.json" "$rate" "$(IFS=,; echo "${conditions[*]}")" "$out"
