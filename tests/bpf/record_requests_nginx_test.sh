#!/usr/bin/env bash
# platoon record --requests on a server it did not build: Debian's nginx proxying the mock. The
# requests platoon counts on nginx's port equal the lines nginx writes to its own access log over
# the recording (load runs only inside it), and its upstream requests to the mock equal them too.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp recngxreq
stop_grace=0.5
require_root

start_mock
start_nginx --access-log
log=$tmp/nginx/logs/access.log

"$bin/platoon" record -i 0.5 --requests --pid "$master,$workers" -o "$tmp/n.trace" 2> "$tmp/rec.err" & rec=$!; pids+=($rec)
wait_started "$tmp/rec.err" recording record
before=$(wc -l < "$log")
sport=$nport run_load --rate 1500 --connections 30 --threads 1 --duration 3 > /dev/null 2>&1 || fail "load"
sleep 0.3
after=$(wc -l < "$log")
kill -INT "$rec"; wait "$rec" || { cat "$tmp/rec.err"; fail "record exit status"; }
"$bin/platoon" report "$tmp/n.trace" --format json > "$tmp/r.json" || fail "report"
"$bin/platoon" report "$tmp/n.trace" | sed -n '/^Requests/,$p'
python3 - "$tmp/r.json" "$nport" "$mport" "$((after - before))" <<'PY' || fail "platoon's request counts disagree with nginx's access log"
import json, sys
r = json.load(open(sys.argv[1]))["requests"]
nport, mport, logged = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
server = [s for s in r["server"] if s["port"] == nport]
seen = sum(s["count"] + s["partial"] for s in server)
upstream = sum(c["count"] + c["partial"] for c in r["client"] if c["remote"].endswith(f":{mport}"))
print(f"nginx's access log: {logged} lines; platoon: {seen} requests on :{nport} "
      f"({len(server)} server rows), {upstream} to the mock; lost {r['lost']}")
assert r["lost"] == 0
assert abs(seen - logged) <= max(2, 0.005 * logged), "server-side count is not the access log's"
assert abs(upstream - logged) <= max(2, 0.005 * logged), "upstream count is not the access log's"
PY
echo PASS
