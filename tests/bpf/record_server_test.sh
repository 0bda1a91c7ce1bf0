#!/usr/bin/env bash
# platoon record attached to a running platoon-server under load: the carriers' drain numbers
# from the runtime's USDT probes agree with the server's own counters (/metrics) over the same
# span, and its epoll cycles show up. Load runs only while the recording is attached.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp recsrv
require_root
# metric NAME CARRIER: the value of NAME{carrier="CARRIER"} in the saved scrape $2
metric() { local v; v=$(awk -v n="$1{carrier=\"carrier-$3\"}" '$1 == n { printf "%d\n", $2 }' "$2")
           [ -n "$v" ] || fail "no $1 for carrier-$3 in $2"; echo "$v"; }

start_mock
start_server --carriers 2

"$bin/platoon" record -i 0.5 --pid "$spid" -o "$tmp/s.trace" 2> "$tmp/rec.err" & rec=$!; pids+=($rec)
wait_started "$tmp/rec.err" recording record
curl -sf "http://127.0.0.1:$sport/metrics" > "$tmp/m0" || fail "scrape"
run_load --rate 3000 --connections 60 --threads 1 --duration 3 --json "$tmp/load.json" > /dev/null 2>&1 || fail "load"
sleep 0.3
curl -sf "http://127.0.0.1:$sport/metrics" > "$tmp/m1" || fail "scrape"
sleep 0.3
kill -INT "$rec"; wait "$rec" || { cat "$tmp/rec.err"; fail "record exit status"; }
cat "$tmp/rec.err"
"$bin/platoon" report "$tmp/s.trace" --format json > "$tmp/r.json" || fail "report"
"$bin/platoon" report "$tmp/s.trace" > "$tmp/r.txt" || fail "text report"

for c in 0 1; do
  fr=$(( $(metric platoon_carrier_fibers_run_total "$tmp/m1" $c) - $(metric platoon_carrier_fibers_run_total "$tmp/m0" $c) ))
  hwm=$(metric platoon_carrier_queue_depth_high_water "$tmp/m1" $c)
  python3 - "$tmp/r.json" "carrier-$c" "$fr" "$hwm" <<'PY' || fail "carrier-$c does not agree with the server's counters"
import json, sys
d = json.load(open(sys.argv[1])); name = sys.argv[2]
fibers, hwm = map(int, sys.argv[3:])
t = [t for t in d["threads"] if t["comm"] == name]
assert t, f"no {name} thread in the report"
t = t[0]; dr = t.get("drain"); io = t.get("io")
assert dr and io, f"{name}: no drain or io section"
hist = dict((int(k), v) for k, v in dr["queue_depth_hist"])
print(f"{name}: batches={dr['batches']} fibers_run={dr.get('fibers_run')} (server {fibers}) "
      f"depth avg={dr['queue_depth_avg']:.2f} max slot={max(hist)} (server high water {hwm}) "
      f"io cycles={io['cycles']} events/cycle={io['events_per_cycle']:.2f}")
assert sum(hist.values()) == dr["batches"], "queue-depth histogram does not add up to the batches"
assert max(hist) <= max(hwm, 1) or max(hist) == 64, "a depth above the server's high-water mark"
assert dr["queue_depth_avg"] >= 1, "a drain starts with at least one fiber"
# The recording spans the scrapes (plus the scrapes' own few fibers), so it may hold a little more.
assert fibers <= dr["fibers_run"] <= fibers * 1.02 + 50, "fibers run per USDT != server counter"
assert io["cycles"] > 0 and t["run_ns"] > 0
PY
done
echo PASS
