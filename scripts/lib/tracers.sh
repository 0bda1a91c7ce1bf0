# The tracers the benchmarks compare, started and stopped alike, and what they read of the
# traced server. Its functions need these set: bin (the build's bin/), here (scripts/), out (the
# output folder) and spid (the server's pid).
#   start_tracer COND ROUND   COND one of tracer_conditions (below); sets tracer_pid (empty
#                             for none) and returns once the tracer is attached
#   stop_tracer COND ROUND    Ctrl-C, after writing its CPU seconds to $out/COND-ROUND.cpu;
#                             SIGKILL if it has not ended 10 s later
# A tracer that has not attached 10 s after its start ends the run (die): a window without it
# would measure nothing.
# Tracers' user space runs on CPU 0.

# The conditions start_tracer knows:
#   platoon: record as shipped; platoon-nostats --no-bpf-stats; platoon-noevents --no-events
#     (aggregates only, as top collects them); platoon-noio --no-io (the scheduler data alone,
#     as perf sched collects it); platoon-requests --requests (the socket programs too)
#   exporter: as shipped (started as root it drops to nobody, holding the BPF stats on);
#     exporter-root --user root (stays root, the stats sampled as top samples them)
#   top: --batch, a snapshot a second; top-5s one per 5 s, as the exporter takes them; top-sched
#     columns without IO or drain (no epoll programs)
#   floor: bench/hook_floor, do-nothing programs on the hooks platoon's aggregates use;
#     floor-sched its scheduler hooks without the epoll exits; floor-requests the socket hooks
#     of the request programs alone
# attached FILE PATTERN: up to 10 s for PATTERN in FILE, the tracer's word that it attached;
# else the tracer is stopped and the run ends (exit 2, one line).
attached() {
  for _ in $(seq 200); do grep -q "$2" "$1" 2> /dev/null && return 0; sleep 0.05; done
  stop_pids 1 "$tracer_pid"
  echo "${script:-benchmark}: the tracer did not attach in 10 s: $(tail -2 "$1" | tr '\n' ' ')" >&2
  exit 2
}
tracer_conditions=(none platoon platoon-nostats platoon-noevents platoon-noio platoon-requests top top-5s top-sched exporter
                   exporter-root perf bpftrace floor floor-sched floor-requests)

start_tracer() {  # condition round → sets tracer_pid (empty for none)
  tracer_pid=
  case $1 in
    none) ;;
    platoon|platoon-nostats|platoon-noevents|platoon-noio|platoon-requests)
      local extra=()
      case $1 in platoon-nostats) extra=(--no-bpf-stats) ;; platoon-noevents) extra=(--no-events) ;;
                 platoon-noio) extra=(--no-io) ;; platoon-requests) extra=(--requests) ;; esac
      taskset -c 0 "$bin/platoon" record --pid "$spid" -o "$out/$1-$2.trace" "${extra[@]}" 2> "$out/$1-$2.err" & tracer_pid=$!
      attached "$out/$1-$2.err" recording ;;
    top|top-5s|top-sched)
      local every=1 cols=(); [ "$1" = top-5s ] && every=5
      [ "$1" = top-sched ] && cols=(--columns cpu_pct,wait_pct,migrations_per_s,wakeups_per_s)
      taskset -c 0 "$bin/platoon" top --pid "$spid" --batch --interval "$every" --iterations 100000 "${cols[@]}" > "$out/$1-$2.log" 2>&1 & tracer_pid=$!
      attached "$out/$1-$2.log" 'platoon top' ;;
    exporter|exporter-root)
      local user=(); [ "$1" = exporter-root ] && user=(--user root)
      taskset -c 0 "$bin/platoon" exporter --pid "$spid" --listen 127.0.0.1:0 "${user[@]}" 2> "$out/$1-$2.err" & tracer_pid=$!
      attached "$out/$1-$2.err" 'listening on'
      eport=$(grep -o 'listening on [0-9.]*:[0-9]*' "$out/$1-$2.err" | sed 's/.*://')
      curl -fsS --max-time 10 "http://127.0.0.1:$eport/metrics" > /dev/null ;;  # one scrape, as Prometheus would
    perf)
      taskset -c 0 perf sched record -o "$out/perf-$2.data" > "$out/perf-$2.log" 2>&1 & tracer_pid=$!
      sleep 1.5 ;;
    floor|floor-sched|floor-requests)
      local only=(); [ "$1" = floor-sched ] && only=(--sched-only); [ "$1" = floor-requests ] && only=(--requests-only)
      taskset -c 0 "$bin/hook_floor" "${only[@]}" > "$out/$1-$2.log" 2>&1 & tracer_pid=$!
      attached "$out/$1-$2.log" attached ;;
    bpftrace)
      taskset -c 0 bpftrace "$here/tracing/sched.bt" "$spid" > "$out/bpftrace-$2.log" 2>&1 & tracer_pid=$!
      attached "$out/bpftrace-$2.log" Attaching; sleep 1 ;;
  esac
}
# The server's CPU seconds so far, to the nanosecond: the sum of its threads' run time
# (/proc/PID/task/*/schedstat). /proc/PID/stat counts in 10 ms ticks, as coarse as the
# differences measured. The server's threads live as long as it does.
server_seconds() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.9f\n", s / 1e9 }'; }
# CPU seconds (user + system) a tracer process has used so far, exited threads included.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"; }
stop_tracer() {  # condition round
  [ -n "$tracer_pid" ] || return 0
  cpu_seconds "$tracer_pid" > "$out/$1-$2.cpu"
  stop_pids 10 "$tracer_pid"
  tracer_pid=
  [ "$1" = perf ] && { du -b "$out/perf-$2.data" | cut -f1 > "$out/perf-$2.size"; rm -f "$out/perf-$2.data"; }
  return 0
}

