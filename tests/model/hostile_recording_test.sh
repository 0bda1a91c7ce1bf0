#!/usr/bin/env bash
# Small hostile recordings: every reader of a trace file must read each generated adversarial
# recording to the end within 30 s and 512 MB, exit 0, and say in one line each reader cap
# (docs/trace-format.md, "Reader caps") that cut something. model_tests writes the files
# (tests/model/hostile_trace_test.cpp, each with a few raw events so that the event exports read
# them too); this runs report, doctor, every export and top --replay on each. A refusal (any
# non-zero exit) fails: a file valid by the format is one every consumer must process.
#
# PLATOON=path runs another platoon binary on the same files (to show an old one failing).
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
platoon=${PLATOON:-$platoon}
use_tmp hostile
time_limit=30
rss_limit_kb=524288
# A sanitized build runs several times slower and its shadow memory counts in the RSS
# (ThreadSanitizer's took 1.5 GB where the plain build stays under the cap): five times both.
if sanitized; then time_limit=150 rss_limit_kb=$((5 * rss_limit_kb)); fi
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

PLATOON_HOSTILE_DIR=$tmp/files "$BUILD/bin/model_tests" --gtest_filter='Hostile*' --gtest_brief=1 > "$tmp/gtest.log" 2>&1 ||
  { cat "$tmp/gtest.log"; echo "FAIL: model_tests --gtest_filter='Hostile*'"; exit 1; }
ls "$tmp"/files/*.platoon > /dev/null 2>&1 || { echo "FAIL: model_tests wrote no files"; exit 1; }

# run NAME FILE cmd...: runs one consumer under the limits; its stderr is left in
# $tmp/BASE.NAME.err, its output file (if any, $out) removed.
run() {
  local name=$1 file=$2; shift 2
  local base; base=$(basename "$file" .platoon)
  local err=$tmp/$base.$name.err
  /usr/bin/time -f '%e %M' -o "$tmp/usage" timeout -s KILL "$time_limit" "$@" > "$tmp/out" 2> "$err"
  local st=$?
  rm -f "$tmp/out" "$out"
  local secs kb; read -r secs kb < <(tail -n 1 "$tmp/usage")
  printf '%-22s %-16s exit %3d  %6ss  %7s KB\n' "$base" "$name" "$st" "$secs" "$kb"
  if [ "$st" -eq 137 ] || [ "$st" -eq 124 ]; then fail "$base $name: killed after ${time_limit}s"; return; fi
  if [ "$st" -ge 128 ]; then fail "$base $name: died of signal $((st - 128))"; return; fi
  [[ $kb =~ ^[0-9]+$ ]] || { fail "$base $name: no memory figure ($(cat "$tmp/usage"))"; return; }
  [ "$kb" -le "$rss_limit_kb" ] || fail "$base $name: max RSS ${kb} KB over ${rss_limit_kb} KB"
  [ "$st" -eq 0 ] || fail "$base $name: refused the file (exit $st): $(head -c 300 "$err")"
  ! grep -qv '^platoon ' "$err" || fail "$base $name: stderr other than platoon's one-line notes: $(head -c 300 "$err")"
}

# expect_note FILE-BASE PATTERN NAME..: each consumer said what the caps cut, in one line.
expect_note() {
  local base=$1 pattern=$2 name n; shift 2
  for name in "$@"; do
    n=$(grep -c -- "$pattern" "$tmp/$base.$name.err")
    [ "$n" -eq 1 ] || fail "$base $name: $n lines matching /$pattern/, not one (stderr: $(head -c 300 "$tmp/$base.$name.err"))"
  done
}
# expect_no_note FILE-BASE PATTERN NAME..: no cap cut anything these consumers keep, so no note.
expect_no_note() {
  local base=$1 pattern=$2 name; shift 2
  for name in "$@"; do
    ! grep -q -- "$pattern" "$tmp/$base.$name.err" || fail "$base $name: a cap note with nothing cut: $(grep -- "$pattern" "$tmp/$base.$name.err")"
  done
}

consumers=(report report-json report-html doctor perfetto chrome csv top-replay)
for f in "$tmp"/files/*.platoon; do
  out=; run report "$f" "$platoon" report "$f"
  out=; run report-json "$f" "$platoon" report "$f" --format json
  out=$tmp/out.html; run report-html "$f" "$platoon" report "$f" --format html -o "$out"
  out=; run doctor "$f" "$platoon" doctor "$f"
  out=$tmp/out.pftrace; run perfetto "$f" "$platoon" export "$f" --format perfetto -o "$out"
  out=$tmp/out.json; run chrome "$f" "$platoon" export "$f" --format chrome -o "$out"
  out=$tmp/out.csv; run csv "$f" "$platoon" export "$f" --format csv -o "$out"
  out=; run top-replay "$f" "$platoon" top --replay "$f" --batch
done

# (a) has more threads and pairs in one snapshot than a reader keeps: every consumer reads it, and
# drops what the generator wrote past the cap (131,072 of each written, 32,768 kept).
expect_note a-huge-then-empty "memory caps.* dropped $((131072 - 32768)) threads, $((131072 - 32768)) pairs:" "${consumers[@]}"
# (b) has more threads coming and going than report and doctor keep, more snapshots than replay
# and chrome hold; csv and perfetto stream it and keep every snapshot.
expect_note b-short-lived "came and went" report report-json report-html doctor
expect_note b-short-lived "memory caps.*snapshots" top-replay chrome
expect_no_note b-short-lived "memory caps" report report-json report-html doctor csv perfetto
# (c) inflates to per-CPU counters past the caps: every consumer reads them.
expect_note c-per-cpu-bomb "memory caps.*per-CPU" "${consumers[@]}"

[ "$failures" -eq 0 ] || { echo "FAIL: $failures check(s) failed"; exit 1; }
echo "PASS: hostile recordings within ${time_limit}s and ${rss_limit_kb} KB for ${#consumers[@]} consumers"
