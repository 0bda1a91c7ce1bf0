#!/usr/bin/env bash
# The source documents' experiment seen from the kernel: the same server and load with unpinned
# carriers and with each remedy (pinned, N+1 cores, work stealing), each run recorded with
# `platoon record --requests`, the four interleaved --repeats times. Prints, per configuration,
# the median over the repeats (and its range) of what the clients measured (platoon-load's
# latency, corrected for coordinated omission and not) next to what the kernel measured (the
# server time and socket wait of each request, the socket wait's runnable share, the carriers'
# migrations), then how often `platoon doctor UNPINNED --vs REMEDY` found the remedy healthier.
#
# usage: scripts/run-seed-experiment.sh [BUILD_DIR] [--rate R] [--duration S] [--repeats N]
#                                       [--output-dir DIR]
#   (default rate 4000 req/s over 50 connections, 6 s measured after 1 s of warm-up, 5 repeats)
#   CPUs (this project's machines have two): unpinned, n+1 and stealing run the server, the mock
#   and the load on CPUs 0,1; pinned runs its one carrier on CPU 1, the rest on CPU 0. The
#   recorder runs on the load's CPUs.
# Writes DIR/<run>-<repeat>.trace, DIR/<run>-<repeat>/ (run-benchmark.sh's outputs),
# DIR/vs-<run>-<repeat>.txt and DIR/seed.json (default DIR build/bench/seed).
set -euo pipefail
script=run-seed-experiment
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/common.sh"
build=build
[ $# -gt 0 ] && [[ $1 != --* ]] && { build=$1; shift; }
rate=4000 duration=6 repeats=5 out=
options=(--rate=rate --duration=duration --repeats=repeats --output-dir=out)
parse_options "$@"
[[ $rate =~ ^[0-9]+$ && $rate -ge 1 ]] || die "--rate needs a whole number of requests per second, got $rate"
[[ $duration =~ ^[0-9]+$ && $duration -ge 1 ]] || die "--duration needs whole seconds, got $duration"
[[ $repeats =~ ^[0-9]+$ && $repeats -ge 1 ]] || die "--repeats needs a whole number >= 1, got $repeats"
out=${out:-$build/bench/seed}
[ -x "$build/bin/platoon" ] || die "$build/bin/platoon not built (make BUILD=$build)"
rm -rf "$out"; mkdir -p "$out"

# run NAME ARGS..: one run-benchmark.sh run, recorded with requests.
run() {
  local name=$1; shift
  echo "== $name" >&2
  "$here/run-benchmark.sh" --build "$build" --rate "$rate" --connections 50 --warmup 1 --duration "$duration" \
    --no-pidstat --record "$out/$name.trace" --requests --output-dir "$out/$name" "$@" > "$out/$name.log" 2>&1 ||
    die "the $name run failed (see $out/$name.log)"
}
shared=(--load-cpuset 0,1 --server-cpuset 0,1 --mock-cpuset 0,1)
runs=(unpinned pinned n+1 stealing)
for i in $(seq "$repeats"); do
  run "unpinned-$i" --threads 2 "${shared[@]}"
  run "pinned-$i" --threads 1 --pin --load-cpuset 0 --server-cpuset 1 --mock-cpuset 0
  run "n+1-$i" --threads 1 "${shared[@]}"
  run "stealing-$i" --threads 2 --ws "${shared[@]}"
  for r in "${runs[@]}"; do
    "$build/bin/platoon" report "$out/$r-$i.trace" -f json > "$out/$r-$i.report.json"
    [ "$r" = unpinned ] && continue
    # doctor exits 1 when it has findings: its verdict is what is wanted here.
    "$build/bin/platoon" doctor "$out/unpinned-$i.trace" --vs "$out/$r-$i.trace" > "$out/vs-$r-$i.txt" || true
  done
done

python3 - "$out" "$repeats" "${runs[@]}" <<'PY'
import json, statistics, sys
out, repeats, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def figures(name):
    load = json.load(open(f"{out}/{name}/load-results.json"))
    rep = json.load(open(f"{out}/{name}.report.json"))
    server = (rep.get("requests") or {}).get("server") or [{}]
    s = max(server, key=lambda g: g.get("count", 0))
    return {"load_p50_ms": load["latency_us"]["p50"] / 1e3, "load_p99_ms": load["latency_us"]["p99"] / 1e3,
            "load_uncorrected_p99_ms": load["uncorrected_latency_us"]["p99"] / 1e3,
            "server_time_p50_ms": s.get("server_time_us", {}).get("p50", 0) / 1e3,
            "server_time_p99_ms": s.get("server_time_us", {}).get("p99", 0) / 1e3,
            "socket_wait_p99_us": s.get("socket_wait_us", {}).get("p99", 0),
            "socket_wait_runnable_pct": s.get("socket_wait_by_state_pct", {}).get("runnable", 0),
            "carrier_migrations_per_s": sum(t.get("migrations_per_s", 0) for t in rep.get("threads", [])
                                            if t.get("comm", "").startswith("carrier"))}
result = {}
for r in runs:
    per = [figures(f"{r}-{i}") for i in range(1, repeats + 1)]
    result[r] = {k: {"median": statistics.median(x[k] for x in per), "min": min(x[k] for x in per),
                     "max": max(x[k] for x in per)} for k in per[0]}
    if r != runs[0]:
        verdicts = [next((l for l in open(f"{out}/vs-{r}-{i}.txt") if l.startswith("healthier:")), "")
                    for i in range(1, repeats + 1)]
        result[r]["doctor_vs_unpinned"] = {"remedy_healthier": sum(v.startswith("healthier: B") for v in verdicts),
                                           "of": repeats, "first": verdicts[0].strip()}
cols = [("load_p50_ms", "load p50 ms", 2), ("load_p99_ms", "p99", 2), ("load_uncorrected_p99_ms", "uncorr p99", 2),
        ("server_time_p50_ms", "server p50 ms", 2), ("server_time_p99_ms", "p99", 2),
        ("socket_wait_p99_us", "sock wait p99 us", 0), ("socket_wait_runnable_pct", "runnable %", 1),
        ("carrier_migrations_per_s", "migr/s", 0)]
print(f"medians of {repeats} runs each [min-max]")
print(f"{'run':<9}" + "".join(f"{h:>20}" for _, h, _ in cols))
for r in runs:
    cells = [f"{result[r][k]['median']:.{d}f} [{result[r][k]['min']:.{d}f}-{result[r][k]['max']:.{d}f}]" for k, _, d in cols]
    print(f"{r:<9}" + "".join(f"{c:>20}" for c in cells))
for r in runs[1:]:
    v = result[r]["doctor_vs_unpinned"]
    print(f"doctor unpinned --vs {r}: the remedy healthier in {v['remedy_healthier']} of {v['of']}; first: {v['first']}")
json.dump(result, open(f"{out}/seed.json", "w"), indent=1)
PY
