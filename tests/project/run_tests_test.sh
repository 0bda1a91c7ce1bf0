#!/usr/bin/env bash
# The test runner tells the truth (scripts/run-tests.sh), run on a scratch tree beside this one
# whose tests do what the real ones may: pass, skip with a reason, skip for a reason CI lists
# (a real GoogleTest: model_tests' fuzz-seed writer), hang, leave kernel.bpf_stats_enabled on, and
# start a sanitized program that reports an error while the test itself exits 0.
#  a. the closing line is "N passed, M failed, K skipped", each skip listed above it with its
#     reason;
#  b. under CI=true a skip whose reason tests/allowed-skips does not list is a failure, a
#     listed one stays a skip;
#  c. a hung test gets TERM first, so its exit trap puts the sysctl back, then it fails as
#     timed out; a test that exits leaving the sysctl changed fails, and the runner puts it back;
#  d. a sanitizer's report from any process a test started fails that test, and is kept.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
use_tmp runner
require_root "(it writes kernel.bpf_stats_enabled)"
[ -x "$bin/model_tests" ] || fail "$bin/model_tests not built"
model_tests=$(cd "$(dirname "$bin/model_tests")" && pwd)/model_tests
sysctl=/proc/sys/kernel/bpf_stats_enabled
stats_was=$(cat "$sysctl")
cleanup() { stop_pids 0.3; echo "$stats_was" > "$sysctl"; rm -rf "$tmp"; }
echo 0 > "$sysctl"

mkdir -p "$tmp/tree/scripts" "$tmp/tree/tests/group" "$tmp/tree/b/bin"
cp "$root/scripts/run-tests.sh" "$tmp/tree/scripts/"
cp "$root/tests/allowed-skips" "$tmp/tree/tests/"
ln -s "$model_tests" "$tmp/tree/b/bin/model_tests"
t=$tmp/tree/tests/group
echo 'exit 0' > "$t/a_pass_test.sh"
printf 'echo working\necho "needs a unicorn"\nexit 77\n' > "$t/b_skip_test.sh"
printf 'echo 1 > %s\nexit 0\n' "$sysctl" > "$t/c_leaves_stats_test.sh"
printf 'trap "echo 0 > %s" EXIT\necho 1 > %s\nsleep 60\n' "$sysctl" "$sysctl" > "$t/d_hangs_test.sh"
# An AddressSanitizer build that writes past a heap block: its report goes where the runner says.
printf '#include <stdlib.h>\nint main(void) { volatile int *p = malloc(4 * sizeof(int)); p[4] = 1; free((void *)p); return 0; }\n' \
  > "$tmp/overflow.c"
cc -fsanitize=address -g -o "$tmp/overflow" "$tmp/overflow.c" || fail "cc -fsanitize=address"
printf '%s > /dev/null 2>&1 || true\nexit 0\n' "$tmp/overflow" > "$t/e_sanitized_test.sh"

run() { (cd "$tmp/tree" && SHELL_TEST_SECONDS=2 timeout 60 "$@" scripts/run-tests.sh b 'TraceFileTest.WritesFuzzSeedsWhenAsked:TraceFileTest.RoundTrip*'); }

# a, c: not under CI
run env -u CI > "$tmp/plain.out" 2>&1; st=$?
cat "$tmp/plain.out"
[ "$st" -ne 0 ] || fail "the runner exited 0 with failures"
last=$(tail -1 "$tmp/plain.out")
echo "$last" | grep -qE '^[0-9]+ passed, 3 failed, 2 skipped$' || fail "closing line: '$last'"
grep -q '^  b_skip_test: needs a unicorn$' "$tmp/plain.out" || fail "the shell skip is not listed with its reason"
grep -q '^  model_tests TraceFileTest.WritesFuzzSeedsWhenAsked: PLATOON_WRITE_FUZZ_SEEDS not set$' "$tmp/plain.out" \
  || fail "the GoogleTest skip is not listed with its reason"
grep -q 'c_leaves_stats_test left kernel.bpf_stats_enabled=1' "$tmp/plain.out" || fail "the leaked sysctl is not a failure"
grep -q 'd_hangs_test timed out' "$tmp/plain.out" || fail "the hung test is not said to time out"
grep -q 'd_hangs_test left' "$tmp/plain.out" && fail "the hung test's trap did not run (no TERM before KILL)"
[ "$(cat "$sysctl")" = 0 ] || fail "the sysctl is left at $(cat "$sysctl")"
grep -q '^\[  FAILED  \] e_sanitized_test: 1 sanitizer report(s) in .*, the first:$' "$tmp/plain.out" \
  || fail "the sanitizer's report did not fail the test that exited 0"
grep -q 'ERROR: AddressSanitizer: heap-buffer-overflow' "$tmp/plain.out" || fail "the report's first line is not shown"
ls "$tmp/tree/b/test-logs/e_sanitized_test.sanitizer/"report.* > /dev/null || fail "the report was not kept"
passed_gtests=$(echo "$last" | grep -oE '^[0-9]+')
[ "$passed_gtests" -ge 2 ] || fail "the real GoogleTests did not pass: $last"
echo "ok plain: $last"

# b: under CI the unicorn fails, the fuzz-seed writer stays a skip
rm "$t/c_leaves_stats_test.sh" "$t/d_hangs_test.sh" "$t/e_sanitized_test.sh"
run env CI=true > "$tmp/ci.out" 2>&1; st=$?
cat "$tmp/ci.out"
last=$(tail -1 "$tmp/ci.out")
[ "$st" -ne 0 ] || fail "CI accepted an unlisted skip"
echo "$last" | grep -qE '^[0-9]+ passed, 1 failed, 1 skipped$' || fail "CI closing line: '$last'"
grep -q 'b_skip_test skipped under CI, and its reason is not in tests/allowed-skips: needs a unicorn' "$tmp/ci.out" \
  || fail "the CI failure does not say why"
grep -q 'WritesFuzzSeedsWhenAsked: PLATOON_WRITE_FUZZ_SEEDS not set (allowed under CI)' "$tmp/ci.out" \
  || fail "the listed skip is not allowed under CI"
echo "ok CI: $last"

# Everything passing under CI exits 0.
rm "$t/b_skip_test.sh"
run env CI=true > "$tmp/ok.out" 2>&1 || { cat "$tmp/ok.out"; fail "a clean run failed"; }
echo "ok clean: $(tail -1 "$tmp/ok.out")"
echo PASS
