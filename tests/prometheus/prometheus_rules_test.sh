#!/usr/bin/env bash
# The fleet alerting rules (scripts/prometheus/platoon.rules.yml):
#  a. `promtool check rules` accepts the file;
#  b. `promtool test rules` passes tests/prometheus/platoon.rules.test.yml (synthetic series:
#     every alert fires when it should, with its labels and annotations, and not before its
#     `for:` nor on healthy series; the recording rules give the series' known rates);
#  c. every recording rule and alert of the file is exercised by that test file and shown in
#     docs/exporter.md's "Alerting rules";
#  d. every metric the rules read is one the exporter writes (a quoted name in tui/, the
#     histograms' _bucket/_sum/_count included) or one of the planned cgroup/CPU families;
#  e. as root with a build: a live scrape of `platoon exporter` on a platoon-server under load
#     holds every such existing series, and the epoll histogram's le="2" bucket the rules use;
#  f. the alerts' thresholds are doctor's (scripts/prometheus/sync-thresholds.py), and, as root
#     with a cgroup cpu controller, the rules and doctor agree on one live target: a CPU hog in a
#     cgroup with a quota of 20 ms per 100 ms (cpu.stat says how many of its periods were
#     throttled), watched by `platoon exporter` and `platoon doctor` over the same 4 s. promtool
#     evaluates the throttle, steal and interrupt alerts' expressions over the scraped series
#     (tests/prometheus/agreement.py), each must hold exactly where doctor reports the finding,
#     with the same share and threshold; then with the quota lifted, where neither fires.
# Exit 0 pass, 1 fail, 77 skip (no promtool).
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
rules=$root/scripts/prometheus/platoon.rules.yml
unit=$root/tests/prometheus/platoon.rules.test.yml
command -v promtool > /dev/null || skip "needs promtool (Debian's prometheus package)"
use_tmp promrules

# a, b
promtool check rules "$rules" > "$tmp/check.out" 2>&1 || { cat "$tmp/check.out"; fail "promtool check rules"; }
grep -q SUCCESS "$tmp/check.out" || { cat "$tmp/check.out"; fail "promtool check rules said no SUCCESS"; }
echo "ok check: $(grep SUCCESS "$tmp/check.out" | sed 's/^ *//')"
promtool test rules "$unit" > "$tmp/test.out" 2>&1 || { cat "$tmp/test.out"; fail "promtool test rules"; }
echo "ok unit tests: $(grep -c 'alertname:\|expr:' "$unit") cases"
# f, first half: the thresholds against doctor's header, and the docs' alert table.
python3 "$root/scripts/prometheus/sync-thresholds.py" > "$tmp/sync.out" 2>&1 || { cat "$tmp/sync.out"; fail "the rules' thresholds are not doctor's"; }
echo "ok thresholds: each alert's is doctor's (sync-thresholds.py)"

# c. Names as the rules file declares them, against what the test file evaluates.
sed -n 's/^ *- record: *\([^ ]*\).*/\1/p' "$rules" | sort -u > "$tmp/records"
sed -n 's/^ *- alert: *\([^ ]*\).*/\1/p' "$rules" | sort -u > "$tmp/alerts"
[ -s "$tmp/records" ] && [ -s "$tmp/alerts" ] || fail "no rules found in $rules"
while read -r r; do
  grep -qE "^ *- expr: *$r\$" "$unit" || fail "recording rule $r has no promql_expr_test"
done < "$tmp/records"
while read -r a; do
  grep -qE "alertname: *$a\b" "$unit" || fail "alert $a has no alert_rule_test"
  # it fires in some case and stays silent in another (before its for:, or on healthy series)
  awk -v a="$a" '/alertname:/ { cur = $0; sub(/.*alertname: */, "", cur); sub(/[ ,}].*/, "", cur) }
                 /exp_alerts:/ && cur == a { if ($0 ~ /exp_alerts: *\[\]/) quiet++; else fires++ }
                 END { exit !(fires > 0 && quiet > 0) }' "$unit" || fail "alert $a is not tested both firing and silent"
done < "$tmp/alerts"
echo "ok coverage: $(wc -l < "$tmp/records") recording rules, $(wc -l < "$tmp/alerts") alerts"
# and docs/exporter.md's "Alerting rules" shows each of them
doc=$root/docs/exporter.md
sed -n '/^## Alerting rules/,/^## /p' "$doc" > "$tmp/doc"
cat "$tmp/records" "$tmp/alerts" | while read -r n; do
  grep -qF "\`$n\`" "$tmp/doc" || fail "$n is not in docs/exporter.md's Alerting rules"
done || exit 1
echo "ok docs: every rule in docs/exporter.md"

# d. Metric names read by the rules (comments left out; the rules' own names are platoon:...).
planned=""  # every family the rules read is exported now
sed 's/#.*//' "$rules" | grep -o 'platoon_[a-z0-9_]*' | sort -u > "$tmp/used"
[ -s "$tmp/used" ] || fail "no metric names found in $rules"
: > "$tmp/existing"
while read -r m; do
  base=$m
  if ! grep -rqF "\"$m\"" "$root/tui"; then
    base=$(echo "$m" | sed -E 's/_(bucket|sum|count)$//')
  fi
  if [ "$base" != "$m" ] || grep -rqF "\"$m\"" "$root/tui"; then
    grep -rqF "\"$base\"" "$root/tui" || fail "$m: the exporter has no family $base (tui/) and it is not a planned one"
    echo "$m" >> "$tmp/existing"; echo "ok exported: $m"
  elif grep -qw "$m" <<< "$planned"; then
    echo "ok planned: $m"
  else
    fail "$m: neither written by the exporter (tui/) nor one of the planned families"
  fi
done < "$tmp/used"

# e. A live scrape, when this can run it (root for BPF, and a build).
if [ "$(id -u)" != 0 ] || [ ! -x "$platoon" ] || [ ! -x "$bin/platoon-server" ] || ! command -v curl > /dev/null; then
  echo "live scrape left out (needs root, curl and $bin/platoon, platoon-server)"
else
  start_mock
  start_server --carriers 1
  start_load --rate 500 --connections 10 --threads 1 --duration 10
  start_exporter "$tmp/exp.log" --pid "$spid" --requests
  sleep 1.5
  curl -sf "http://127.0.0.1:$eport/metrics" > "$tmp/scrape" || fail "scrape of the exporter"
  while read -r m; do
    case $m in
      platoon_cpu_*)  # per CPU, not per thread
        grep -qE "^$m\{cpu=\"[0-9]+\"\} " "$tmp/scrape" || fail "live scrape: no $m{cpu=...}" ;;
      platoon_cgroup_*)  # per CPU cgroup of the target: the server's own, whatever it is here
        grep -qE "^$m\{cgroup=\"/[^\"]*\"\} " "$tmp/scrape" || fail "live scrape: no $m{cgroup=...}" ;;
      platoon_requests_*)  # per port the server listens on
        grep -qE "^$m\{[^}]*port=\"$sport\"" "$tmp/scrape" || fail "live scrape: no $m for port $sport" ;;
      *) grep -qE "^$m\{[^}]*thread=\"carrier-0\"" "$tmp/scrape" || { grep carrier-0 "$tmp/scrape" | head; fail "live scrape: no $m for carrier-0"; } ;;
    esac
  done < "$tmp/existing"
  grep -qE '^platoon_thread_epoll_events_per_cycle_bucket\{[^}]*thread="carrier-0"[^}]*,le="2"\}' "$tmp/scrape" \
    || fail "live scrape: no le=\"2\" bucket of the epoll histogram"
  echo "ok live scrape: $(wc -l < "$tmp/existing") families the rules read, on carrier-0, per CPU and per port"
fi
# f. The rules and doctor on one live target.
. "$root/tests/lib/cgroups.sh"
cg=
cleanup() { stop_pids; remove_cgroup "$cg"; rm -rf "$tmp"; }
if [ "$(id -u)" != 0 ] || [ ! -x "$platoon" ] || [ "$(nproc)" -lt 2 ]; then
  echo "live agreement left out (needs root, 2 CPUs and $platoon)"
elif ! cg=$(make_cpu_cgroup "platoon-agree-$$" 20000 100000); then
  echo "live agreement left out (no cgroup cpu controller)"
else
  stop_pids; pids=()
  taskset -c 1 sh -c 'while :; do :; done' & hog=$!; pids+=($hog)
  cgroup_add_pid "$cg" "$hog" || fail "could not move the hog into $cg"
  start_exporter "$tmp/agree-exporter.log" --pid "$hog"
  # cpu.stat's nr_periods and nr_throttled, the truth the findings and alerts are about
  cgstat() { awk '$1 == "nr_periods" { p = $2 } $1 == "nr_throttled" { t = $2 } END { print p, t }' "$cg/cpu.stat"; }
  agree() {  # NAME: doctor and 13 scrapes over the same 4 s, then promtool over them
    mkdir -p "$tmp/agree-$1"
    cgstat > "$tmp/agree-$1.cgstat"
    timeout 20 "$platoon" doctor --pid "$hog" --duration 4 --format json > "$tmp/agree-$1.json" 2> "$tmp/agree-$1.err" &
    local doc=$!
    timeout 20 python3 "$root/tests/prometheus/agreement.py" scrape "http://127.0.0.1:$eport/metrics" "$tmp/agree-$1" 13 0.33 \
      || fail "scraping the exporter ($1)"
    wait "$doc" || { cat "$tmp/agree-$1.err"; fail "doctor ($1)"; }
    cgstat >> "$tmp/agree-$1.cgstat"
    # The target is what cpu.stat says it is: throttled in most of its periods with the quota,
    # in none without; doctor's finding follows, so the agreement below is not both silent.
    python3 - "$1" "$tmp/agree-$1.cgstat" "$tmp/agree-$1.json" <<'PY' || fail "doctor against cpu.stat ($1)"
import json, sys
name, (p0, t0), (p1, t1) = sys.argv[1], *(map(int, l.split()) for l in open(sys.argv[2]))
ids = [f["id"] for f in json.load(open(sys.argv[3]))["findings"]]
print(f"{name}: cpu.stat {t1 - t0} of {p1 - p0} periods throttled; doctor's findings {ids}")
if name == "quota":
    assert p1 - p0 >= 20 and t1 - t0 >= 0.5 * (p1 - p0), "the quota did not throttle the hog"
    assert "cpu_throttled" in ids, "cpu.stat says throttled, doctor has no cpu_throttled"
else:
    assert t1 == t0, "throttled without a quota"
    assert "cpu_throttled" not in ids, "cpu.stat says not throttled, doctor reports cpu_throttled"
PY
    label=$(sed -n 's/^platoon_cgroup_periods_total{cgroup="\([^"]*platoon-agree-'$$'\)"}.*/\1/p' "$tmp/agree-$1/00.prom" | head -1)
    [ -n "$label" ] || { grep '^platoon_cgroup' "$tmp/agree-$1/00.prom"; fail "the exporter serves no series of $cg"; }
    python3 "$root/tests/prometheus/agreement.py" build "$rules" "$tmp/agree-$1.json" "$tmp/agree-$1" "$label" 1 \
      "$tmp/agree-$1.test.yml" > "$tmp/agree-$1.out" || { cat "$tmp/agree-$1.out"; fail "the rules' thresholds are not the ones doctor printed ($1)"; }
    promtool test rules "$tmp/agree-$1.test.yml" > "$tmp/agree-$1.promtool" 2>&1 \
      || { cat "$tmp/agree-$1.promtool"; fail "the alerts and doctor disagree on the same target ($1)"; }
    echo "ok $1: $(cat "$tmp/agree-$1.out")"
  }
  sleep 1  # a second of throttling before the window, so every rate in it is the steady one
  agree quota
  set_cpu_quota "$cg" -1 100000 || fail "could not lift the quota"
  agree free
fi
echo "prometheus rules: all checks passed"
