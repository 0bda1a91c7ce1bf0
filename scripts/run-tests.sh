#!/usr/bin/env bash
# Runs every test binary of a build and ends with the line "N passed, M failed".
# usage: scripts/run-tests.sh BUILD_DIR [gtest filter]
set -uo pipefail
build=${1:-build}
filter=${2:-*}
passed=0
failed=0
log_dir="$build/test-logs"
mkdir -p "$log_dir"

# GoogleTest binaries: count individual tests from their XML reports.
for bin in "$build"/bin/*_tests; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  xml="$log_dir/$name.xml"
  rm -f "$xml"
  echo "== $name"
  timeout --signal=KILL 900 "$bin" --gtest_filter="$filter" --gtest_output="xml:$xml" 2>&1 | tee "$log_dir/$name.log" | grep -E '^\[ +(OK|FAILED|RUN|PASSED|SKIPPED) +\]|Failure|error:' | grep -v '^\[ RUN' || true
  status=${PIPESTATUS[0]}
  if [ -f "$xml" ]; then
    t=$(grep -o 'tests="[0-9]*"' "$xml" | head -1 | grep -o '[0-9]*')
    f=$(grep -o 'failures="[0-9]*"' "$xml" | head -1 | grep -o '[0-9]*')
    d=$(grep -o 'disabled="[0-9]*"' "$xml" | head -1 | grep -o '[0-9]*')
    s=$(grep -c '<skipped' "$xml" || true)
    passed=$((passed + t - f - d - s))
    failed=$((failed + f))
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
      echo "$name exited with status $status"
      failed=$((failed + 1))
    fi
  else
    echo "$name crashed (status $status) before writing its report; see $log_dir/$name.log"
    tail -20 "$log_dir/$name.log"
    failed=$((failed + 1))
  fi
done

# Shell tests: tests/*.sh, each one test, exit 0 = pass, 77 = skipped.
for t in tests/*_test.sh; do
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  echo "== $name"
  if BUILD="$build" timeout --signal=KILL 600 bash "$t" > "$log_dir/$name.log" 2>&1; then
    echo "[       OK ] $name"; passed=$((passed + 1))
  else
    st=$?
    if [ "$st" -eq 77 ]; then echo "[  SKIPPED ] $name"; tail -3 "$log_dir/$name.log"
    else echo "[  FAILED  ] $name (status $st)"; tail -20 "$log_dir/$name.log"; failed=$((failed + 1)); fi
  fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
