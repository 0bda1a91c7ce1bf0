#!/usr/bin/env bash
# Every configuration of the experiment back to back, then one markdown table:
# baseline, work stealing, pinning, stealing + pinning, N+1 cores, pool mode, and the peers
# (nginx in front of the mock vs platoon-server --passthrough; the Go net/http handoff).
# Each configuration runs once at the fixed rate and once closed-loop for max TPS.
#
# usage: scripts/run-quick-comparison.sh [--rate R] [--duration S] [--warmup S] [--threads N]
#          [--server-cpuset L] [--side-cpuset L] [--connections C] [--think-time MS]
#          [--only NAME[,NAME..]] [--no-max] [--output-dir DIR] [--build DIR]
set -uo pipefail
script=run-quick-comparison
invocation="scripts/run-quick-comparison.sh $*"
. "$(cd "$(dirname "$0")" && pwd)/lib/common.sh"
here=$(cd "$(dirname "$0")" && pwd)
rate=5000 duration=10 warmup=3 threads=1 server_cpuset=1 side_cpuset=0 connections=100 think=1
only= no_max= out= build=build
options=(
  --rate=rate --duration=duration --warmup=warmup --threads=threads --server-cpuset=server_cpuset
  --side-cpuset=side_cpuset --connections=connections --think-time=think --only=only
  --no-max+no_max --output-dir=out --build=build
)
parse_options "$@"
out=${out:-build/bench/comparison-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
echo "$invocation" > "$out/command.txt"
# N+1: the server's cpuset plus one more CPU (here the side CPU, shared with mock and load).
plus_one="$server_cpuset,$side_cpuset"

configs=(
  "baseline|--server platoon --mode carrier --threads $threads"
  "work-stealing|--server platoon --mode carrier --threads $threads --ws"
  "pinned|--server platoon --mode carrier --threads $threads --pin"
  "stealing+pinned|--server platoon --mode carrier --threads $threads --ws --pin"
  "n+1-cores|--server platoon --mode carrier --threads $threads --server-cpuset $plus_one"
  "master-poller|--server platoon --mode carrier --threads $threads --poller master"
  "pool|--server platoon --mode pool --threads $threads"
  "passthrough|--server platoon --mode carrier --threads $threads --passthrough"
  "nginx-proxy|--server nginx --threads $threads"
  "go-handoff|--server go --threads $threads"
)

trap 'echo "run-quick-comparison: interrupted" >&2; exit 130' INT TERM
for entry in "${configs[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  if [ -n "$only" ] && ! [[ ",$only," == *",$name,"* ]]; then continue; fi
  common=(--connections "$connections" --load-cpuset "$side_cpuset" --mock-cpuset "$side_cpuset"
          --mock-think-time "$think" --warmup "$warmup" --duration "$duration" --build "$build" --no-pidstat)
  [[ $args == *--server-cpuset* ]] || common+=(--server-cpuset "$server_cpuset")
  echo "== $name: fixed rate $rate" >&2
  # shellcheck disable=SC2086
  "$here/run-benchmark.sh" $args "${common[@]}" --rate "$rate" --output-dir "$out/$name-rate" > /dev/null \
    || echo "run-quick-comparison: $name at fixed rate failed" >&2
  if [ -z "$no_max" ]; then
    echo "== $name: max TPS" >&2
    # shellcheck disable=SC2086
    "$here/run-benchmark.sh" $args "${common[@]}" --output-dir "$out/$name-max" > /dev/null \
      || echo "run-quick-comparison: $name at max TPS failed" >&2
  fi
done

python3 - "$out" "$rate" <<'PY' | tee "$out/comparison.md"
import json, os, sys
out, rate = sys.argv[1], sys.argv[2]
def load(d):
    try:
        with open(os.path.join(out, d, "summary.json")) as f: return json.load(f)
    except (OSError, ValueError): return None
names = []
for d in sorted(os.listdir(out)):
    if d.endswith("-rate") or d.endswith("-max"):
        n = d.rsplit("-", 1)[0]
        if n not in names: names.append(n)
order = ["baseline","work-stealing","pinned","stealing+pinned","n+1-cores","master-poller","pool","passthrough","nginx-proxy","go-handoff"]
names.sort(key=lambda n: order.index(n) if n in order else 99)
def ms(v): return "-" if v is None else f"{v/1000:.2f}"
print(f"| config | max TPS | server CPU at max | p50 ms @{rate} | p99 ms | p99.9 ms | errors | CPUs utilized | CPU µs/req | ctx sw/req | migrations/s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for n in names:
    r, m = load(n + "-rate"), load(n + "-max")
    lat = (r or {}).get("latency_us") or {}
    maxtps = f"{m['rate']:.0f}" if m and m.get("rate") else "-"
    maxcpu = f"{m['cpus_utilized']:.2f}" if m else "-"
    if r:
        print(f"| {n} | {maxtps} | {maxcpu} | {ms(lat.get('p50'))} | {ms(lat.get('p99'))} | {ms(lat.get('p999'))} | {r.get('errors')} | "
              f"{r['cpus_utilized']:.2f} | {r['cpu_us_per_request']} | {r['context_switches_per_request']} | {r['migrations_per_s']} |")
    else:
        print(f"| {n} | {maxtps} | {maxcpu} | - | - | - | - | - | - | - | - |")
PY
# The same comparison as charts, from platoon-load's own histograms: comparison.html beside it.
python3 "$here/comparison_page.py" "$out" --build "$build" ||
  echo "run-quick-comparison: no comparison.html (see above)" >&2
