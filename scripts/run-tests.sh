#!/usr/bin/env bash
# Runs every test of a build and ends with the line "N passed, M failed, K skipped", each skipped
# test listed above it with its one-line reason.
# usage: scripts/run-tests.sh BUILD_DIR [GTEST_FILTER [SHELL_GLOB]]
#   GTEST_FILTER picks GoogleTests (default *), SHELL_GLOB the shell tests tests/*/GLOB_test.sh
#   (default *; "none" runs none). GTEST_SECONDS (900) and SHELL_TEST_SECONDS (600) bound each
#   GoogleTest binary and each shell test.
#
# Under CI (CI=true) every test must run: a skip counts as a failure unless its reason contains
# one of the texts in tests/allowed-skips (conditions the CI machine legitimately lacks).
#
# A sanitized build's reports fail the test whose process wrote them (sanitizer_clean below).
#
# kernel.bpf_stats_enabled is global: a test that turns it on and is killed before its own
# cleanup would leave it on for every later test. It is saved before the run and put back after
# each test; a test that exits leaving it changed fails.
set -uo pipefail
build=${1:-build}
filter=${2:-*}
shell_glob=${3:-*}
root=$(cd "$(dirname "$0")/.." && pwd)
allowed_file=$root/tests/allowed-skips
ci=false
[ "${CI:-}" = true ] && ci=true
passed=0
failed=0
skipped=0
skip_lines=()
log_dir="$build/test-logs"
mkdir -p "$log_dir"

# The allowed reasons: each non-comment line's text before " | ".
allowed=()
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  allowed+=("${line%% | *}")
done < "$allowed_file"

# note_skip TEST REASON: counts a skip, or under CI a failure when REASON is on no allowed line.
note_skip() {
  local test=$1 reason=$2 a
  if [ "$ci" = true ]; then
    for a in "${allowed[@]}"; do
      case "$reason" in *"$a"*) skipped=$((skipped + 1)); skip_lines+=("  $test: $reason (allowed under CI)"); return ;; esac
    done
    echo "[  FAILED  ] $test skipped under CI, and its reason is not in tests/allowed-skips: $reason"
    failed=$((failed + 1))
    return
  fi
  skipped=$((skipped + 1))
  skip_lines+=("  $test: $reason")
}

# The sysctl a test may turn on; put back after each test, a change left behind is a failure.
stats_sysctl=/proc/sys/kernel/bpf_stats_enabled
stats_saved=$(cat "$stats_sysctl" 2> /dev/null || true)
# restore_stats TEST: 0 when TEST left the sysctl as it was saved, else puts it back and 1.
restore_stats() {
  [ -n "$stats_saved" ] || return 0
  local now
  now=$(cat "$stats_sysctl" 2> /dev/null || true)
  [ "$now" = "$stats_saved" ] && return 0
  echo "$stats_saved" > "$stats_sysctl" 2> /dev/null || true
  echo "[  FAILED  ] $1 left kernel.bpf_stats_enabled=$now (put back to $stats_saved)"
  return 1
}

# A sanitized build's reports, from any process a test starts, go to files rather than to output
# a test may swallow or delete: a test that leaves one fails, and its reports are kept beside its
# log. (A plain build writes none.)
san_dir=$(realpath "$log_dir")/sanitizer-reports
rm -rf "$san_dir" && mkdir -p "$san_dir" && chmod 1777 "$san_dir"  # tests run some programs as nobody
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$san_dir/report"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$san_dir/report"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$san_dir/report"
# sanitizer_clean TEST: 0 when no process of TEST wrote a report, else names them and 1.
sanitizer_clean() {
  local reports=("$san_dir"/report.*)
  [ -e "${reports[0]}" ] || return 0
  mkdir -p "$log_dir/$1.sanitizer" && mv "${reports[@]}" "$log_dir/$1.sanitizer/"
  echo "[  FAILED  ] $1: ${#reports[@]} sanitizer report(s) in $log_dir/$1.sanitizer/, the first:"
  grep -m1 -h -E 'WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|runtime error' "$log_dir/$1.sanitizer"/report.* | head -1
  return 1
}

# A hung test gets TERM first, so its exit trap can undo what it changed, then KILL.
run_limited() { local limit=$1; shift; timeout --signal=TERM --kill-after=20 "$limit" "$@"; }

# GoogleTest binaries: count individual tests from their XML reports.
for bin in "$build"/bin/*_tests; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  xml="$log_dir/$name.xml"
  rm -f "$xml"
  echo "== $name"
  run_limited "${GTEST_SECONDS:-900}" "$bin" --gtest_filter="$filter" --gtest_output="xml:$xml" 2>&1 | tee "$log_dir/$name.log" | grep -E '^\[ +(OK|FAILED|RUN|PASSED|SKIPPED) +\]|Failure|error:' | grep -v '^\[ RUN' || true
  status=${PIPESTATUS[0]}
  restore_stats "$name" || failed=$((failed + 1))
  sanitizer_clean "$name" || failed=$((failed + 1))
  if [ -f "$xml" ]; then
    # One line of counts (tests failures disabled), then a line per skipped test: NAME<TAB>REASON
    # (the skip message without its file:line).
    summary=$(python3 - "$xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
print(root.get("tests"), root.get("failures"), root.get("disabled", "0"))
for case in root.iter("testcase"):
    s = case.find("skipped")
    if s is None:
        continue
    lines = [l.strip() for l in (s.get("message") or "").splitlines() if l.strip()]
    reason = lines[-1] if len(lines) > 1 else "(no reason given)"
    print(f"{case.get('classname')}.{case.get('name')}\t{reason}")
PY
    )
    read -r t f d <<< "$(head -1 <<< "$summary")"
    s=0
    while IFS=$'\t' read -r test reason; do
      [ -n "$test" ] || continue
      s=$((s + 1))
      note_skip "$name $test" "$reason"
    done < <(tail -n +2 <<< "$summary")
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

# Shell tests: tests/GROUP/*_test.sh (grouped as the GoogleTest suites are), each one test,
# exit 0 = pass, 77 = skipped (its last line the reason).
for t in "$root"/tests/*/${shell_glob}_test.sh; do
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  echo "== $name"
  st=0
  BUILD="$build" run_limited "${SHELL_TEST_SECONDS:-600}" bash "$t" > "$log_dir/$name.log" 2>&1 || st=$?
  clean=1
  restore_stats "$name" || clean=0
  sanitizer_clean "$name" || clean=0
  if [ "$clean" = 0 ]; then
    failed=$((failed + 1))
  elif [ "$st" -eq 0 ]; then
    echo "[       OK ] $name"; passed=$((passed + 1))
  elif [ "$st" -eq 77 ]; then
    reason=$(grep -v '^[[:space:]]*$' "$log_dir/$name.log" | tail -1 | sed -E 's/^(SKIP|skip):? *//')
    echo "[  SKIPPED ] $name: $reason"
    note_skip "$name" "${reason:-(no reason given)}"
  else
    [ "$st" -eq 124 ] && echo "$name timed out (${SHELL_TEST_SECONDS:-600} s)"
    echo "[  FAILED  ] $name (status $st)"; tail -20 "$log_dir/$name.log"; failed=$((failed + 1))
  fi
done

# A report from a process that outlived its test: nobody's to blame, still a failure.
sanitizer_clean late-reports || failed=$((failed + 1))

if [ ${#skip_lines[@]} -gt 0 ]; then
  echo "skipped:"
  printf '%s\n' "${skip_lines[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
