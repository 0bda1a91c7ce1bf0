#!/usr/bin/env bash
# `platoon report --format html` opened in a real browser with the network cut: headless
# Chromium in its own network namespace (unshare -n), driven over the DevTools protocol by
# tests/tools/html_page.py. For each page, from the page itself: no console message, no request
# beyond the file, every chart drew the points it was given, a screenshot that is not blank; and
# the numbers held against independent figures (tests/tools/check_html_report.py):
#  1. a loaded two-carrier platoon-server recorded with --requests: %CPU and %wait as drawn (the
#     chart's scales inverted) and placement per interval equal `top --replay`'s, one series per
#     thread /proc showed; one batch heat map per carrier, its batches the report's epoll returns; the server's requests as many as platoon-load sent, their server time p50
#     between the mock's think time and what platoon-load measured;
#  2. --vs against a second recording with a CPU hog beside each carrier: both sides equal their
#     own top --replay, and the page's verdict is that the run without hogs is healthier;
#  3. a procfs recording: the same %CPU and %wait, and the charts that need BPF say why not;
#  4. hostile recordings (tests/model/hostile_trace_test.cpp): every note the reader printed is
#     on the page, and no script error.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp html
require_root
py=/usr/bin/python3  # Debian's, with python3-selenium and python3-pil (install-deps)
for c in /usr/bin/chromium /usr/bin/chromedriver unshare; do require_cmd "$c" "needs $c (scripts/install-deps.sh)"; done
"$py" -c 'import selenium, PIL' 2> /dev/null || skip "needs python3-selenium and python3-pil (scripts/install-deps.sh)"
t=90  # seconds any one step may take

# open NAME PAGE: the page in Chromium with no network (its own network, pid and mount
# namespaces: a timeout takes the whole browser with it); its JSON in $tmp/NAME.json.
open_page() {
  HTML_PAGE_PROFILE=$tmp/profile-$1 timeout -k 5 "$t" unshare -n -p -f -m --mount-proc --kill-child \
    "$py" tests/tools/html_page.py "$2" --screenshot "$tmp/$1.png" > "$tmp/$1.json" 2> "$tmp/$1.err" ||
    { tail -5 "$tmp/$1.err"; fail "$1: the browser did not open $2"; }
}
# html TRACE OUT [ARGS..]: the page, checked for size (a few MB at most).
html() {
  local trace=$1 out=$2; shift 2
  timeout "$t" "$platoon" report "$trace" --format html -o "$out" "$@" 2> "$tmp/html.err" || { cat "$tmp/html.err"; fail "report --format html $trace"; }
  local size; size=$(stat -c %s "$out")
  [ "$size" -lt 4000000 ] || fail "$out is $size bytes"
  echo "$out: $size bytes"
}
# record_load TRACE RATE [ARGS..]: the server recorded while platoon-load runs 3 s at RATE; the
# server's thread count from /proc meanwhile in TRACE.threads.
record_load() {
  local trace=$1 rate=$2; shift 2
  timeout "$t" "$platoon" record -i 0.5 --pid "$spid" -o "$trace" "$@" 2> "$tmp/rec.err" & local rec=$!; pids+=($rec)
  wait_started "$tmp/rec.err" recording record
  ls "/proc/$spid/task" | wc -l > "$trace.threads"
  timeout "$t" "$bin/platoon-load" --url "http://127.0.0.1:$sport/fruits" --rate "$rate" --connections 40 --threads 1 \
    --duration 3 --json "$trace.load.json" > /dev/null 2>&1 || fail "load"
  kill -INT "$rec"; wait "$rec" || { cat "$tmp/rec.err"; fail "record exit status"; }
  timeout "$t" "$platoon" top --replay "$trace" --batch > "$trace.top" || fail "top --replay $trace"
  timeout "$t" "$platoon" report "$trace" --format json > "$trace.json" || fail "report --format json $trace"
}

start_mock --think-time-ms 1 --threads 1
start_server --carriers 2

echo "== 1. a loaded server, with requests"
record_load "$tmp/a.trace" 3000 --requests
html "$tmp/a.trace" "$tmp/a.html"
open_page a "$tmp/a.html"
"$py" tests/tools/check_html_report.py "$tmp/a.json" --name server --top "$tmp/a.trace.top" --report "$tmp/a.trace.json" \
  --threads "$(cat "$tmp/a.trace.threads")" --carriers 2 --load "$tmp/a.trace.load.json" --think-us 1000 || fail "the server's page"

echo "== 2. --vs: the same load, then with a CPU hog beside each carrier"
# B is worse by design: a busy loop on each CPU takes half of every CPU from the carriers.
hogs=()
for cpu in 0 1; do taskset -c "$cpu" sh -c 'while :; do :; done' & hogs+=($!); pids+=($!); done
record_load "$tmp/b.trace" 3000 --requests
stop_pids 0.3 "${hogs[@]}"
html "$tmp/a.trace" "$tmp/vs.html" --vs "$tmp/b.trace"
timeout "$t" "$platoon" doctor "$tmp/a.trace" --vs "$tmp/b.trace" --format json > "$tmp/vs.doctor.json" || fail "doctor --vs"
[ "$(json "$tmp/vs.doctor.json" 'd["healthier"]')" = a ] || fail "doctor --vs does not find the run without hogs healthier"
open_page vs "$tmp/vs.html"
"$py" tests/tools/check_html_report.py "$tmp/vs.json" --name vs --top "$tmp/a.trace.top" --report "$tmp/a.trace.json" \
  --threads "$(cat "$tmp/a.trace.threads")" --top-b "$tmp/b.trace.top" --report-b "$tmp/b.trace.json" \
  --threads-b "$(cat "$tmp/b.trace.threads")" --verdict a || fail "the --vs page"

echo "== 3. procfs"
record_load "$tmp/p.trace" 1500 --procfs
html "$tmp/p.trace" "$tmp/p.html"
open_page procfs "$tmp/p.html"
"$py" tests/tools/check_html_report.py "$tmp/procfs.json" --name procfs --top "$tmp/p.trace.top" --report "$tmp/p.trace.json" \
  --threads "$(cat "$tmp/p.trace.threads")" --procfs || fail "the procfs page"

echo "== 4. hostile recordings"
PLATOON_HOSTILE_DIR=$tmp/hostile timeout 120 "$BUILD/bin/model_tests" --gtest_filter='Hostile*' --gtest_brief=1 > "$tmp/gtest.log" 2>&1 ||
  { tail -20 "$tmp/gtest.log"; fail "model_tests --gtest_filter='Hostile*'"; }
# a: more threads than a reader keeps; b: more snapshots than the page draws points, threads
# coming and going; c: per-CPU counters past the caps.
for base in a-huge-then-empty b-short-lived c-per-cpu-bomb; do
  f=$tmp/hostile/$base.platoon
  [ -f "$f" ] || fail "model_tests did not write $f"
  timeout "$t" "$platoon" report "$f" --format html -o "$tmp/$base.html" 2> "$tmp/$base.report.err" ||
    { cat "$tmp/$base.report.err"; fail "$base: report --format html"; }
  open_page "$base" "$tmp/$base.html"
  "$py" - "$tmp/$base.json" "$base" "$tmp/$base.report.err" <<'PY' || fail "$base: the page"
import json, sys
page, name, err = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
bad = []
if not page.get("ready"): bad.append(f"not ready: {page.get('error')}")
if page.get("console"): bad.append(f"console: {page['console'][:3]}")
if page.get("requests"): bad.append(f"requests: {page['requests'][:3]}")
if page.get("broken_links"): bad.append(f"links to nothing: {page['broken_links'][:3]}")
shot = page.get("screenshot") or {}
if not (shot.get("colours", 0) > 50 and shot.get("ink_pct", 0) > 1): bad.append(f"blank screenshot: {shot}")
# What the reader said on stderr of the file is on the page too.
said = [l.split(": ", 2)[-1].strip() for l in open(err) if l.startswith("platoon report: ")]
if not said: bad.append("report said nothing of the caps on stderr")
for line in said:
    if line not in page["text"]: bad.append(f"not on the page: {line}")
for c in page["charts"]:
    if not c["absent"] and c["drawn"] != c["points"]: bad.append(f"{c['id']} drew {c['drawn']} of {c['points']}")
print(f"{name}: ready in {page.get('ready_ms', 0):.0f} ms, {len(page['charts'])} charts, {len(said)} reader notes on the page")
for b in bad: print(f"FAIL: {name}: {b}")
sys.exit(1 if bad else 0)
PY
done
echo PASS
