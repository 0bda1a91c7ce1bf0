#!/usr/bin/env bash
# Small hostile recordings (issue 12, defect 6): every reader of a trace file must stay within
# 30 s and 512 MB on generated adversarial recordings, and say in one line when a reader cap
# (docs/trace-format.md, "Reader caps") cut something. model_tests writes the files
# (tests/model/hostile_trace_test.cpp); this runs report, doctor, every export and top --replay
# on each. A non-zero exit is fine when it comes with `platoon ...:` lines on stderr (e.g. "has no
# raw events"); a timeout, a crash or too much memory is not.
#
# PLATOON=path runs another platoon binary on the same files (to show an old one failing).
set -uo pipefail
. "$(dirname "$0")/lib/common.sh"
platoon=${PLATOON:-$platoon}
use_tmp hostile
time_limit=30
rss_limit_kb=524288
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

PLATOON_HOSTILE_DIR=$tmp/files "$BUILD/bin/model_tests" --gtest_filter='Hostile*' --gtest_brief=1 > "$tmp/gtest.log" 2>&1 ||
  { cat "$tmp/gtest.log"; echo "FAIL: model_tests --gtest_filter='Hostile*'"; exit 1; }
ls "$tmp"/files/*.platoon > /dev/null 2>&1 || { echo "FAIL: model_tests wrote no files"; exit 1; }

# run NAME FILE cmd...: runs one consumer under the limits; its stderr is left in $tmp/NAME.err.
run() {
  local name=$1 file=$2; shift 2
  local base; base=$(basename "$file" .platoon)
  local err=$tmp/$base.$name.err
  /usr/bin/time -f '%e %M' -o "$tmp/usage" timeout -s KILL "$time_limit" "$@" > "$tmp/out" 2> "$err"
  local st=$?
  local secs kb; read -r secs kb < <(tail -n 1 "$tmp/usage")
  printf '%-22s %-16s exit %3d  %6ss  %7s KB\n' "$base" "$name" "$st" "$secs" "$kb"
  if [ "$st" -eq 137 ] || [ "$st" -eq 124 ]; then fail "$base $name: killed after ${time_limit}s"; return; fi
  if [ "$st" -ge 128 ]; then fail "$base $name: died of signal $((st - 128))"; return; fi
  [[ $kb =~ ^[0-9]+$ ]] || { fail "$base $name: no memory figure ($(cat "$tmp/usage"))"; return; }
  [ "$kb" -le "$rss_limit_kb" ] || fail "$base $name: max RSS ${kb} KB over ${rss_limit_kb} KB"
  if [ "$st" -ne 0 ]; then
    [ -s "$err" ] || fail "$base $name: exit $st with nothing on stderr"
    ! grep -qv '^platoon ' "$err" || fail "$base $name: exit $st with an unclear error: $(head -c 300 "$err")"
  fi
}

# expect_note FILE-BASE NAME PATTERN: the consumer said what the caps cut.
expect_note() {
  grep -q -- "$3" "$tmp/$1.$2.err" || fail "$1 $2: no note matching /$3/ (stderr: $(head -c 300 "$tmp/$1.$2.err"))"
}

consumers=(report report-json doctor perfetto chrome csv top-replay)
for f in "$tmp"/files/*.platoon; do
  run report "$f" "$platoon" report "$f"
  run report-json "$f" "$platoon" report "$f" --format json
  run doctor "$f" "$platoon" doctor "$f"
  run perfetto "$f" "$platoon" export "$f" --format perfetto -o "$tmp/out.pftrace"
  run chrome "$f" "$platoon" export "$f" --format chrome -o "$tmp/out.json"
  run csv "$f" "$platoon" export "$f" --format csv -o "$tmp/out.csv"
  run top-replay "$f" "$platoon" top --replay "$f" --batch
done

# (c) inflates to per-CPU counters past the caps: every consumer that reads snapshots says so.
for name in report report-json doctor csv top-replay; do expect_note c-per-cpu-bomb "$name" "memory caps"; done
# (a) has more threads in one snapshot than a reader keeps.
for name in report doctor csv top-replay; do expect_note a-huge-then-empty "$name" "memory caps"; done
# (b) has more threads coming and going than report and doctor keep, more snapshots than replay holds.
for name in report doctor; do expect_note b-short-lived "$name" "came and went"; done
expect_note b-short-lived top-replay "memory caps"

[ "$failures" -eq 0 ] || { echo "FAIL: $failures check(s) failed"; exit 1; }
echo "PASS: hostile recordings within ${time_limit}s and ${rss_limit_kb} KB for ${#consumers[@]} consumers"
