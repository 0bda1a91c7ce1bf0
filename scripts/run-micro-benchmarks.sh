#!/usr/bin/env bash
# Runs the micro-benchmarks of a build (runtime_bench, drain_stats_bench: what `make bench` runs;
# the server benchmark is run-benchmark.sh) and writes their figures as JSON under BUILD_DIR/bench/.
# usage: scripts/run-micro-benchmarks.sh BUILD_DIR [extra runtime_bench options, e.g. --reps 9]
# Environment: BENCH_CPUS=0-1 runs the benchmark under `taskset -c $BENCH_CPUS` (the runtime
# then pins carrier i to the i-th of those CPUs); BENCH_NO_PIN=1 lets every thread float.
set -euo pipefail
build=${1:-build}
shift || true
bin="$build/bin/runtime_bench"
out_dir="$build/bench"
json="$out_dir/runtime.json"

if [ ! -x "$bin" ]; then
  echo "run-micro-benchmarks: $bin not built (make BUILD=$build)" >&2
  exit 1
fi
mkdir -p "$out_dir"

args=(--json "$json")
[ "${BENCH_NO_PIN:-0}" = 1 ] && args+=(--no-pin)
cmd=("$bin" "${args[@]}" "$@")
if [ -n "${BENCH_CPUS:-}" ]; then cmd=(taskset -c "$BENCH_CPUS" "${cmd[@]}"); fi
export PLATOON_BENCH_LAUNCHER="${cmd[*]}"  # recorded in the JSON context

echo "== runtime_bench ($(nproc) CPUs${BENCH_CPUS:+, taskset -c $BENCH_CPUS}): ${cmd[*]}"
"${cmd[@]}"

# The headline figures against the goals.
if command -v jq >/dev/null; then
  echo "== summary ($json)"
  jq -r '
    def f(k): if .[k] == null then "n/a" else (.[k] * 100 | round / 100 | tostring) end;
    "fiber_switch_ns    \(f("fiber_switch_ns")) (goal <= \(.goals.fiber_switch_ns), met: \(.meets_goals.fiber_switch_ns))",
    "yield_roundtrip_ns \(f("yield_roundtrip_ns"))",
    "spawn_finish_ns    \(f("spawn_finish_ns")) (goal <= \(.goals.spawn_finish_ns), met: \(.meets_goals.spawn_finish_ns))",
    "unpark_p50_us      \(f("unpark_p50_us"))",
    "unpark_p99_us      \(f("unpark_p99_us"))",
    "pingpong_per_s     \(f("pingpong_per_s"))",
    "pinning            \(.context.pinning.threads | map("\(.name)") | join(", ")); bench thread cpu \(.context.pinning.bench_thread_cpu)"
  ' "$json"
else
  echo "== wrote $json"
fi

# What a drain costs with the runtime's stats table off (no tracer) and on (platoon attached).
echo "== drain_stats_bench"
"$build/bin/drain_stats_bench" --json "$out_dir/drain_stats.json"
