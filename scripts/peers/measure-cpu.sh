#!/usr/bin/env bash
# CPU per request of the peers and of platoon-server, measured in one run against one backend:
#   nginx        nginx in front of platoon-mock (proxy_pass, upstream keep-alive)  ~ passthrough
#   passthrough  platoon-server --passthrough --carriers 1
#   go           go-handoff (net/http, blocking client call, JSON decode + encode)   ~ platoon
#   platoon      platoon-server --carriers 1 (JSON decode + encode)
# platoon-mock and the load run on --load-cpu, the measured server alone on --server-cpu.
# For each server: start it, warm up, then a measured load run; the server's CPU is the
# utime+stime delta of its processes (/proc/PID/stat, whole thread group, nginx's master and
# workers) over that run, divided by the responses the load counted. The schedstat run time
# (/proc/PID/task/*/schedstat, ns) is printed beside it; it books the idle-exit gap of each
# wakeup as run time (see ARCHITECTURE.md), so it reads a little higher on servers that sleep.
# others_on_server_cpu_pct: busy time of --server-cpu not spent by the server (anything else that
# ran there, e.g. a build); when it is not near 0 the machine was not quiet.
#
# usage: scripts/peers/measure-cpu.sh [options]
#   --servers "LIST"     any of nginx passthrough go platoon (default: all four, in that order)
#   --rate R             fixed rate, req/s, with platoon-load (default 10000); 0: closed loop
#                        at maximum throughput (wrk if --load wrk, else platoon-load without --rate)
#   --load platoon-load|wrk   load generator (default platoon-load if present, else wrk;
#                        wrk is always closed loop)
#   --connections C      (default 100)
#   --duration S         measured seconds (default 20)
#   --warmup S           warm-up seconds before each measured run (default 3)
#   --think-time-ms MS   platoon-mock think time (default 1)
#   --mock-threads N     (default 1)
#   --load-cpu L         cpuset of platoon-mock and the load (default 0)
#   --server-cpu L       cpuset of the measured server (default 1)
#   --build DIR          where bin/platoon-server, platoon-mock, platoon-load, go-handoff are
#                        (default build; go-handoff is built there if missing)
#   --mock PATH / --load-bin PATH / --server-bin PATH   override single binaries
#   --out DIR            logs and results.tsv (default: a new /tmp/platoon-peers.XXXXXX)
set -uo pipefail
script=measure-cpu
. "$(cd "$(dirname "$0")" && pwd)/../lib/common.sh"

here=$(cd "$(dirname "$0")" && pwd)
servers="nginx passthrough go platoon" rate=10000 load= connections=100 duration=20 warmup=3
think=1 mock_threads=1 load_cpu=0 server_cpu=1 build=build mock= load_bin= server_bin= out=
options=(
  --servers=servers --rate=rate --load=load --connections=connections --duration=duration
  --warmup=warmup --think-time-ms=think --mock-threads=mock_threads --load-cpu=load_cpu
  --server-cpu=server_cpu --build=build --mock=mock --load-bin=load_bin --server-bin=server_bin
  --out=out
)
parse_options "$@"
for v in rate connections duration warmup mock_threads; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--${v//_/-} must be a whole number"
done
[ "$duration" -gt 0 ] || die "--duration must be positive"
for s in $servers; do case $s in nginx|passthrough|go|platoon) ;; *) die "unknown server '$s'" ;; esac; done
mock=${mock:-$build/bin/platoon-mock}
load_bin=${load_bin:-$build/bin/platoon-load}
server_bin=${server_bin:-$build/bin/platoon-server}
if [ -z "$load" ]; then [ -x "$load_bin" ] && load=platoon-load || load=wrk; fi
case $load in platoon-load) [ -x "$load_bin" ] || die "$load_bin is missing" ;;
              wrk) command -v wrk >/dev/null || die "wrk is missing (apt-get install wrk)"; rate=0 ;;
              *) die "--load must be platoon-load or wrk" ;; esac
[ -x "$mock" ] || die "$mock is missing (make build/bin/platoon-mock)"
case " $servers " in *" passthrough "*|*" platoon "*) [ -x "$server_bin" ] || die "$server_bin is missing" ;; esac
case " $servers " in *" go "*)
  [ -x "$build/bin/go-handoff" ] || "$here/go-handoff/build.sh" "$build" >/dev/null || die "cannot build go-handoff" ;;
esac
out=${out:-$(mktemp -d /tmp/platoon-peers.XXXXXX)}
mkdir -p "$out" || die "cannot create $out"
ticks=$(getconf CLK_TCK)

trap stop_all EXIT
trap 'echo "measure-cpu: interrupted" >&2; exit 130' INT TERM
stop_pid() { kill -INT "$1" 2>/dev/null; for _ in $(seq 30); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
             kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
tree() { echo "$1"; pgrep -P "$1" 2>/dev/null; }          # nginx: master and workers
cpu_ticks() {  # PIDS.. -> utime+stime of the thread groups, in ticks
  local t=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] || continue
    t=$((t + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
  done
  echo "$t"
}
run_ns() {  # PIDS.. -> schedstat run time of their live threads, ns
  local p
  for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done | awk '{s += $1} END {printf "%.0f\n", s}'
}
snapshot() {  # PIDS.. -> one line per thread: pid tid comm run_ns utime+stime (kept for checking)
  local p t
  for p in "$@"; do
    for t in /proc/"$p"/task/*; do
      echo "$p ${t##*/} $(tr ' ' _ < "$t/comm" 2>/dev/null) $(awk '{print $1}' "$t/schedstat" 2>/dev/null)" \
        "$(sed 's/^.*) //' "$t/stat" 2>/dev/null | awk '{print $12 + $13}')"
    done
  done
}
switches() {  # PIDS.. -> context switches (voluntary + involuntary) of their live threads
  local p
  for p in "$@"; do cat /proc/"$p"/task/*/status 2>/dev/null; done |
    awk '/^(non)?voluntary_ctxt_switches:/ {s += $2} END {printf "%.0f\n", s}'
}
cpu_busy() {  # CPUSET (0 / 0,1 / 0-1) -> busy ticks of those CPUs, every process included
  local list=() part
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then list+=($(seq "${part%-*}" "${part#*-}")); else list+=("$part"); fi
  done
  awk -v want=" ${list[*]} " '$1 ~ /^cpu[0-9]+$/ { c = substr($1, 4); if (index(want, " " c " ")) s += $2 + $3 + $4 + $7 + $8 }
                               END {printf "%.0f\n", s}' /proc/stat
}

run_load() {  # URL SECONDS JSON -> the load's output on stdout
  if [ "$load" = wrk ]; then
    taskset -c "$load_cpu" wrk -t1 -c"$connections" -d"${2}s" --latency "$1"
  else
    local a=(--url "$1" --connections "$connections" --threads 1 --duration "$2" --latency --json "$3")
    [ "$rate" -gt 0 ] && a+=(--rate "$rate")
    taskset -c "$load_cpu" "$load_bin" "${a[@]}"
  fi
}

# --- the backend, shared by every server
taskset -c "$load_cpu" "$mock" --port 0 --think-time-ms "$think" --threads "$mock_threads" > "$out/mock.log" 2>&1 &
mock_pid=$!; pids+=($mock_pid)
mock_port=$(port_of "$out/mock.log") || die "platoon-mock did not start (see $out/mock.log)"
backend=127.0.0.1:$mock_port

{
  echo "# $(date -Is) $(uname -r) cpus=$(nproc) load=$load rate=${rate/#0/max} connections=$connections"
  echo "# duration=${duration}s warmup=${warmup}s think_time_ms=$think mock_threads=$mock_threads load_cpu=$load_cpu server_cpu=$server_cpu"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' server req_per_s requests errors cpu_us_per_req \
    schedstat_us_per_req switches_per_req server_cpu_pct mock_us_per_req p50_us p99_us others_on_server_cpu_pct
} > "$out/results.tsv"

for s in $servers; do
  log=$out/$s.log
  case $s in
    nginx)
      port=$(free_port)
      taskset -c "$server_cpu" "$here/nginx/run-nginx.sh" --port "$port" --backend "$backend" --workers 1 \
        --dir "$out/nginx" > "$log" 2>&1 &
      ;;
    go)
      port=$(free_port)
      GOMAXPROCS=1 taskset -c "$server_cpu" "$build/bin/go-handoff" --port "$port" --backend "$backend" > "$log" 2>&1 &
      ;;
    passthrough|platoon)
      a=(--port 0 --backend "$backend" --carriers 1)
      [ "$s" = passthrough ] && a+=(--passthrough)
      taskset -c "$server_cpu" "$server_bin" "${a[@]}" > "$log" 2>&1 &
      ;;
  esac
  spid=$!; pids+=($spid)
  case $s in passthrough|platoon) port=$(port_of "$log") || die "$s did not start (see $log)" ;; esac
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/fruits" > "$out/$s.sample" 2>/dev/null && break; sleep 0.1; done
  [ -s "$out/$s.sample" ] || die "$s does not answer /fruits (see $log)"

  [ "$warmup" -gt 0 ] && run_load "http://127.0.0.1:$port/fruits" "$warmup" "$out/$s.warmup.json" > "$out/$s.warmup.txt" 2>&1

  procs=$(tree "$spid")
  snapshot $procs > "$out/$s.snap-begin"
  t0=$(cpu_ticks $procs); n0=$(run_ns $procs); m0=$(cpu_ticks "$mock_pid"); w0=$(switches $procs)
  c0=$(cpu_busy "$server_cpu")
  run_load "http://127.0.0.1:$port/fruits" "$duration" "$out/$s.json" > "$out/$s.load.txt" 2>&1
  procs=$(tree "$spid")
  t1=$(cpu_ticks $procs); n1=$(run_ns $procs); m1=$(cpu_ticks "$mock_pid"); w1=$(switches $procs)
  snapshot $procs > "$out/$s.snap-end"
  c1=$(cpu_busy "$server_cpu")
  stop_pid "$spid"

  if [ "$load" = wrk ]; then
    requests=$(awk '/requests in/ {print $1}' "$out/$s.load.txt")
    errors=$(awk '/Non-2xx|Socket errors/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) e += $i} END {print e + 0}' "$out/$s.load.txt")
    secs=$duration
    p50=$(awk '$1 == "50%" {print $2}' "$out/$s.load.txt"); p99=$(awk '$1 == "99%" {print $2}' "$out/$s.load.txt")
  else
    read -r requests errors secs p50 p99 < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
print(j["requests"], j["errors"] + j["timeouts"], j["duration_s"], j["latency_us"]["p50"], j["latency_us"]["p99"])' "$out/$s.json")
  fi
  [ -n "$requests" ] && [ "$requests" -gt 0 ] || { echo "measure-cpu: $s: no requests (see $out/$s.load.txt)" >&2; continue; }
  python3 - "$s" "$requests" "$errors" "$secs" "$((t1 - t0))" "$((n1 - n0))" "$((m1 - m0))" "$((c1 - c0))" "$((w1 - w0))" \
    "$ticks" "$p50" "$p99" "$duration" >> "$out/results.tsv" <<'PY'
import sys
s, req, err, secs, dt, dn, dm, dc, dw, hz, p50, p99, dur = sys.argv[1:]
req, secs, hz, dur = int(req), float(secs), int(hz), float(dur)
cpu_s = int(dt) / hz
# Busy time of the server's CPUs not spent by the server: other processes (a build?) sharing it.
other = max(0, int(dc) - int(dt)) / hz
print("\t".join([s, f"{req / secs:.0f}", str(req), str(err), f"{cpu_s * 1e6 / req:.2f}",
                 f"{int(dn) / 1e3 / req:.2f}", f"{int(dw) / req:.2f}", f"{100 * cpu_s / dur:.1f}", f"{int(dm) / hz * 1e6 / req:.2f}",
                 str(p50), str(p99), f"{100 * other / dur:.1f}"]))
PY
done
grep '^#' "$out/results.tsv"
grep -v '^#' "$out/results.tsv" | column -t -s $'\t'
echo "measure-cpu: logs and results.tsv in $out"
