#!/usr/bin/env bash
# The fleet alerting rules (scripts/prometheus/platoon.rules.yml, issue 15):
#  a. `promtool check rules` accepts the file;
#  b. `promtool test rules` passes tests/prometheus/platoon.rules.test.yml (synthetic series:
#     every alert fires when it should, with its labels and annotations, and not before its
#     `for:` nor on healthy series; the recording rules give the series' known rates);
#  c. every recording rule and alert of the file is exercised by that test file and shown in
#     docs/exporter.md's "Alerting rules";
#  d. every metric the rules read is one the exporter writes (a quoted name in tui/, the
#     histograms' _bucket/_sum/_count included) or one of issue 15's planned cgroup/CPU families;
#  e. as root with a build: a live scrape of `platoon exporter` on a platoon-server under load
#     holds every such existing series, and the epoll histogram's le="2" bucket the rules use.
# Exit 0 pass, 1 fail, 77 skip (no promtool).
set -uo pipefail
. "$(dirname "$0")/lib/common.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
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
planned=""  # every family the rules read is exported now (issue 15)
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
    echo "ok planned (issue 15): $m"
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
  start_exporter "$tmp/exp.log" --pid "$spid"
  sleep 1.5
  curl -sf "http://127.0.0.1:$eport/metrics" > "$tmp/scrape" || fail "scrape of the exporter"
  while read -r m; do
    case $m in
      platoon_cpu_*)  # per CPU, not per thread
        grep -qE "^$m\{cpu=\"[0-9]+\"\} " "$tmp/scrape" || fail "live scrape: no $m{cpu=...}" ;;
      platoon_cgroup_*)  # per CPU cgroup of the target: the server's own, whatever it is here
        grep -qE "^$m\{cgroup=\"/[^\"]*\"\} " "$tmp/scrape" || fail "live scrape: no $m{cgroup=...}" ;;
      *) grep -qE "^$m\{[^}]*thread=\"carrier-0\"" "$tmp/scrape" || { grep carrier-0 "$tmp/scrape" | head; fail "live scrape: no $m for carrier-0"; } ;;
    esac
  done < "$tmp/existing"
  grep -qE '^platoon_thread_epoll_events_per_cycle_bucket\{[^}]*thread="carrier-0"[^}]*,le="2"\}' "$tmp/scrape" \
    || fail "live scrape: no le=\"2\" bucket of the epoll histogram"
  echo "ok live scrape: $(wc -l < "$tmp/existing") families the rules read, on carrier-0 and per CPU"
fi
echo "prometheus rules: all checks passed"
