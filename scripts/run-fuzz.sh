#!/usr/bin/env bash
# Runs libFuzzer targets, each for SECONDS, and fails if any of them finds a crash, a leak, a
# hang or an out-of-memory input.
# usage: scripts/run-fuzz.sh FUZZ_DIR SECONDS BIN...
#   Seeds come from tests/fuzz/corpus/<target>/ (or tests/fuzz/corpus/ for targets without their
#   own directory). They are copied to FUZZ_DIR/corpus/<target>/ first, so the checked-in seeds
#   never change; what the fuzzer learns stays in that scratch copy. Crash inputs land in
#   FUZZ_DIR/artifacts/<target>/, logs in FUZZ_DIR/logs/<target>.log.
# Ends with one line: "fuzz: PASS|FAIL: N target(s), S s each, E executions[, failed: names]".
set -uo pipefail

if [ $# -lt 3 ]; then
  echo "usage: $0 FUZZ_DIR SECONDS BIN..." >&2
  exit 2
fi
fuzz_dir=$1
seconds=$2
shift 2
case $seconds in
  '' | *[!0-9]*) echo "run-fuzz: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;;
esac
repo=$(cd "$(dirname "$0")/.." && pwd)

total_execs=0
failed=()
for bin in "$@"; do
  name=$(basename "$bin")
  if [ ! -x "$bin" ]; then
    echo "run-fuzz: $bin: not an executable" >&2
    failed+=("$name")
    continue
  fi
  seeds="$repo/tests/fuzz/corpus/$name"
  [ -d "$seeds" ] || seeds="$repo/tests/fuzz/corpus"
  corpus="$fuzz_dir/corpus/$name"
  artifacts="$fuzz_dir/artifacts/$name"
  log="$fuzz_dir/logs/$name.log"
  rm -rf "$corpus" "$artifacts"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  if [ -d "$seeds" ]; then
    find "$seeds" -maxdepth 1 -type f -exec cp {} "$corpus/" \;
  fi
  extra=()
  [ -f "$repo/tests/fuzz/$name.dict" ] && extra+=("-dict=$repo/tests/fuzz/$name.dict")
  echo "== $name: ${seconds}s, seeds from ${seeds#"$repo"/}, log $log"
  # -timeout: an input that takes over 10 s is a hang, reported as a failure.
  # -print_final_stats: the executions count for the summary.
  # A recoverable check (only pointer-overflow, for rapidjson) still stops the run unless the
  # suppressions file names it.
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$repo/tests/fuzz/ubsan.supp" \
  "$bin" "$corpus" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "${extra[@]}" \
    >"$log" 2>&1
  status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  execs=${execs:-0}
  total_execs=$((total_execs + execs))
  crashes=$(find "$artifacts" -type f | wc -l)
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    echo "$name: FAILED (exit $status, $crashes artifact(s) in $artifacts), $execs executions"
    grep -E 'ERROR|SUMMARY|panic|runtime error|Test unit written' "$log" | head -10
    failed+=("$name")
  else
    units=$(find "$corpus" -type f | wc -l)
    echo "$name: ok, $execs executions, corpus $units inputs"
  fi
done

if [ ${#failed[@]} -eq 0 ]; then
  echo "fuzz: PASS: $# target(s), ${seconds} s each, $total_execs executions"
else
  echo "fuzz: FAIL: $# target(s), ${seconds} s each, $total_execs executions, failed: ${failed[*]}"
  exit 1
fi
