#!/usr/bin/env bash
# What the request programs (bpf/requests.bpf.h) cost per run against do-nothing programs on the
# same tracepoints (bench/hook_floor --requests-only), and per request, at a fixed rate. Each
# round attaches the floor, then `platoon record --requests --no-events`, to the same server
# under the same load, and reads each program's run count and run time over --duration from the
# kernel's BPF stats (kernel.bpf_stats_enabled=1 while it runs; restored after). The floor is the
# tracepoint's dispatch and a program call, which no program body undercuts.
#
# usage: scripts/bench-request-cost.sh [BUILD_DIR] [--rounds N] [--duration S] [--rate R]
#   CPUs: server (two carriers) on CPU 1; mock, load and the tracers on CPU 0.
# Writes BUILD_DIR/bench/request-cost.json and prints, per tracepoint, the median ns per run of
# the floor and of platoon's program, their ratio, and platoon's BPF ns per request.
set -euo pipefail
script=bench-request-cost
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/common.sh"
build=build
[ $# -gt 0 ] && [[ $1 != --* ]] && { build=$1; shift; }
rounds=10 duration=5 rate=2000
options=(--rounds=rounds --duration=duration --rate=rate)
parse_options "$@"
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 1 ]] || die "--rounds needs a whole number >= 1, got $rounds"
[[ $rate =~ ^[0-9]+$ && $rate -ge 1 ]] || die "--rate needs a whole number of requests per second, got $rate"
[[ $duration =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--duration needs seconds, got $duration"
bin=$build/bin
out=$build/bench/request-cost
[ "$(id -u)" = 0 ] || die "needs root"
[ -x "$bin/hook_floor" ] || die "$bin/hook_floor not built (make BUILD=$build)"
rm -rf "$out"; mkdir -p "$out"
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
tracer=
trap 'set +e; sysctl -qw kernel.bpf_stats_enabled="$stats_before"; pids+=($tracer); stop_all' EXIT
trap 'exit 130' INT TERM
sysctl -qw kernel.bpf_stats_enabled=1

taskset -c 0 "$bin/platoon-mock" --port 0 --think-time-ms 1 --threads 1 > "$out/mock.log" 2>&1 & pids+=($!)
mport=$(port_of "$out/mock.log") || die "the mock did not start"
taskset -c 1 "$bin/platoon-server" --port 0 --backend "127.0.0.1:$mport" --carriers 2 > "$out/server.log" 2>&1 & spid=$!; pids+=($spid)
sport=$(port_of "$out/server.log") || die "the server did not start"
load_s=$(python3 -c "print(int($rounds * 2 * ($duration + 3) + 30))")
taskset -c 0 "$bin/platoon-load" --url "http://127.0.0.1:$sport/fruits" --rate "$rate" --connections 50 --threads 1 \
  --duration "$load_s" > "$out/load.txt" 2>&1 & pids+=($!)
sleep 2
requests() { curl -fsS --max-time 10 "http://127.0.0.1:$sport/metrics" | awk '$1 == "platoon_requests_total" { printf "%d\n", $2 }'; }
progs() { bpftool -j prog show > "$1"; }

for r in $(seq "$rounds"); do
  for cond in floor platoon; do
    if [ "$cond" = floor ]; then
      taskset -c 0 "$bin/hook_floor" --requests-only > "$out/floor-$r.log" 2>&1 & tracer=$!
      for _ in $(seq 200); do grep -q attached "$out/floor-$r.log" && break; sleep 0.05; done
    else
      taskset -c 0 "$bin/platoon" record --pid "$spid" --requests --no-events --no-bpf-stats -o "$out/r-$r.trace" \
        2> "$out/platoon-$r.err" & tracer=$!
      for _ in $(seq 200); do grep -q recording "$out/platoon-$r.err" && break; sleep 0.05; done
    fi
    sleep 1
    progs "$out/$cond-$r.a.json"; q0=$(requests)
    sleep "$duration"
    progs "$out/$cond-$r.b.json"; q1=$(requests)
    echo "$((q1 - q0))" > "$out/$cond-$r.requests"
    kill -INT "$tracer"; wait "$tracer" || true; tracer=
  done
  echo "round $r/$rounds done" >&2
done
rm -f "$out"/r-*.trace
python3 - "$out" "$rounds" "$rate" "$duration" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
pairs = [("data_ready", "floor_data_ready", "req_data_ready"), ("sock_recv_length", "floor_recv", "req_recv"),
         ("tcp_sendmsg_locked", "floor_send_start", "req_send_start"), ("inet_sock_set_state", "floor_sock_state", "req_sock_state")]
def delta(cond, r):
    a = {p["name"]: p for p in json.load(open(f"{out}/{cond}-{r}.a.json")) if "name" in p}
    b = {p["name"]: p for p in json.load(open(f"{out}/{cond}-{r}.b.json")) if "name" in p}
    return {n: (b[n].get("run_cnt", 0) - a[n].get("run_cnt", 0), b[n].get("run_time_ns", 0) - a[n].get("run_time_ns", 0))
            for n in b if n in a}
rows, per_request, per_run = [], [], {"floor": [], "platoon": []}
for r in range(1, rounds + 1):
    f, p = delta("floor", r), delta("platoon", r)
    q = int(open(f"{out}/platoon-{r}.requests").read())
    ns = sum(p.get(x, (0, 0))[1] for _, _, x in pairs)
    if q > 0: per_request.append(ns / q)
    for cond, d, names in (("floor", f, [x for _, x, _ in pairs]), ("platoon", p, [x for _, _, x in pairs])):
        runs = sum(d.get(n, (0, 0))[0] for n in names); t = sum(d.get(n, (0, 0))[1] for n in names)
        if runs: per_run[cond].append(t / runs)
    rows.append({"round": r, "requests": q, "floor": {n: f.get(n) for _, n, _ in pairs}, "platoon": {n: p.get(n) for _, _, n in pairs}})
def med(v): return statistics.median(v) if v else float("nan")
summary = {"rounds": rounds, "rate": float(sys.argv[3]), "duration_s": float(sys.argv[4]), "tracepoints": {}}
print(f"{'tracepoint':<22} {'floor ns/run':>12} {'platoon ns/run':>15} {'ratio':>6}")
for tp, fn, pn in pairs:
    fv = [r["floor"][fn][1] / r["floor"][fn][0] for r in rows if r["floor"][fn] and r["floor"][fn][0]]
    pv = [r["platoon"][pn][1] / r["platoon"][pn][0] for r in rows if r["platoon"][pn] and r["platoon"][pn][0]]
    summary["tracepoints"][tp] = {"floor_ns_per_run": med(fv), "platoon_ns_per_run": med(pv)}
    print(f"{tp:<22} {med(fv):>12.0f} {med(pv):>15.0f} {med(pv) / med(fv) if fv and pv else float('nan'):>6.2f}")
summary["all_floor_ns_per_run"], summary["all_platoon_ns_per_run"] = med(per_run["floor"]), med(per_run["platoon"])
summary["platoon_bpf_ns_per_request"] = med(per_request)
print(f"{'all four':<22} {med(per_run['floor']):>12.0f} {med(per_run['platoon']):>15.0f} "
      f"{med(per_run['platoon']) / med(per_run['floor']):>6.2f}")
print(f"platoon's request programs: {med(per_request):.0f} ns of BPF per request (median of {len(per_request)} rounds)")
json.dump({"summary": summary, "rounds": rows}, open(f"{out}.json", "w"), indent=1)
PY
