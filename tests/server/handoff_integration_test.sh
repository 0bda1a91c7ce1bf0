#!/usr/bin/env bash
# mock + server + load on loopback at a fixed rate: every request succeeds, in carrier and pool
# modes; a deliberate 100 ms server stall (SIGSTOP/SIGCONT) shows in the corrected p99 while
# the uncorrected p99 hides it; 10,000 concurrent connections are served. A sanitized build
# (make SAN=...) is held to a tenth of the rates and 100 connections.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp it
start_mock
# A sanitized build serves a tenth of the rates (every request still checked).
scale=1; sanitized "$bin/platoon-server" && scale=10

# 1. Fixed rate, carrier and pool modes: no errors, achieved rate, and bodies verified by the server
#    tests; here the load checks status and completeness of every response.
for mode in carrier pool; do
  start_server --log "$mode" --scheduler "$mode" --carriers 2
  run_load --rate $((2000 / scale)) --connections 50 --threads 1 --duration 3 --json "$tmp/$mode.json" > "$tmp/$mode-load.txt" 2>&1 || fail "load failed ($mode)"
  req=$(json "$tmp/$mode.json" 'd["requests"]'); err=$(json "$tmp/$mode.json" 'd["errors"]')
  echo "$mode: requests=$req errors=$err rate=$(json "$tmp/$mode.json" 'd["rate"]')"
  [ "$err" = 0 ] || fail "$mode: $err errors"
  [ "$req" -ge $((5800 / scale)) ] || fail "$mode: only $req requests at $((2000 / scale))/s for 3 s"
  body=$(curl -sf "http://127.0.0.1:$sport/fruits") || fail "$mode: curl"
  [[ $body == '{"fruits":[{"name":"Apple","color":"Red","price":1.2}'* ]] || fail "$mode: body $body"
  kill -INT "$spid"; wait "$spid" || fail "$mode: server exit status $?"
done

# 2. A 100 ms stall of the whole server during a fixed-rate run, with few connections so that
#    few requests are in flight when it stops: the corrected p99 must show it, the uncorrected
#    p99 must not. (Scaled, the connections go down with the rate: the uncorrected p99 hides
#    the stall only while fewer than 1% of the requests were in flight when it began.)
start_server --log stall --carriers 2
run_load --rate $((2000 / scale)) --connections $((10 / scale)) --threads 1 --duration 4 --json "$tmp/stall.json" > "$tmp/stall-load.txt" 2>&1 &
load_pid=$!
sleep 2
kill -STOP "$spid"; sleep 0.1; kill -CONT "$spid"
wait $load_pid || fail "stall load failed"
cp99=$(json "$tmp/stall.json" 'd["latency_us"]["p99"]'); up99=$(json "$tmp/stall.json" 'd["uncorrected_latency_us"]["p99"]')
cmax=$(json "$tmp/stall.json" 'd["latency_us"]["max"]')
echo "stall: corrected p99=${cp99}us max=${cmax}us, uncorrected p99=${up99}us"
python3 -c "import sys; c,u,m=map(float,sys.argv[1:]); sys.exit(0 if c>=20000 and m>=90000 and u<c/4 else 1)" "$cp99" "$up99" "$cmax" \
  || fail "the corrected p99 ($cp99) should show the stall and the uncorrected ($up99) hide it"
kill -INT "$spid"; wait "$spid"

# 3. 10,000 concurrent connections: a fiber each. (A sanitized build: 100. ThreadSanitizer maps
#    1.2 MB of trace per fiber and creates one in milliseconds: 10,000 failed with ENOMEM, and
#    1,000 connected too slowly for any request to finish within the load's 5 s timeout.)
many=10000; sanitized "$bin/platoon-server" && many=100
start_server --log many --carriers 2
run_load --rate $((5000 / scale)) --connections "$many" --threads 2 \
  --duration 3 --warmup 3 --timeout 5 --json "$tmp/many.json" > "$tmp/many-load.txt" 2>&1 || fail "10k load failed"
req=$(json "$tmp/many.json" 'd["requests"]'); err=$(json "$tmp/many.json" 'd["errors"]')
open=$(curl -s "http://127.0.0.1:$sport/metrics" | awk '/^platoon_connections_accepted_total/{print $2}')
echo "$many connections: requests=$req errors=$err accepted=$open"
[ "$err" = 0 ] || fail "$many connections: $err errors"
[ "${open:-0}" -ge "$many" ] || fail "$many connections: only $open accepted"
echo PASS
