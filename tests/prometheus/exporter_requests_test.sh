#!/usr/bin/env bash
# platoon exporter --requests on platoon-server under a fixed-rate load: between two scrapes the
# server-time histogram counts as many requests on the server's port as the server's own counter
# (/metrics) did, the backend-time histogram's median bucket holds the mock's think time, the
# socket wait by state adds up to the socket wait histogram's sum, and promtool accepts it all.
# Without --requests no request family is exported.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
require_root
[ -x /usr/bin/promtool ] || skip "needs promtool (Debian's prometheus package)"
require_cmd curl
use_tmp exporter_requests
think_ms=2
start_mock --think-time-ms "$think_ms" --threads 2
start_server --carriers 2
start_exporter "$tmp/exp.log" --pid "$spid" --requests
url="http://127.0.0.1:$eport"
scrape() { curl -sf "$url/metrics" > "$tmp/e$1" && curl -sf "http://127.0.0.1:$sport/metrics" > "$tmp/s$1" || fail "scrape $1"; }
scrape 0
run_load --rate 1500 --connections 30 --threads 1 --duration 3 > /dev/null 2>&1 || fail "load"
scrape 1
promtool check metrics < "$tmp/e1" > "$tmp/promtool.out" 2>&1 || { cat "$tmp/promtool.out"; fail "promtool"; }
[ -s "$tmp/promtool.out" ] && { cat "$tmp/promtool.out"; fail "promtool has remarks"; }
python3 - "$tmp" "$sport" "$mport" "$think_ms" <<'PY' || fail "the request families disagree with the server"
import re, sys
tmp, sport, mport, think_ms = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
def samples(path):
    out = {}
    for line in open(path):
        m = re.match(r'^([a-z_]+)(\{[^}]*\})? (\S+)$', line.strip())
        if m: out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out
e0, e1, s0, s1 = (samples(f"{tmp}/{n}") for n in ("e0", "e1", "s0", "s1"))
def one(d, name, *labels, absent=None):
    hits = [v for (n, l), v in d.items() if n == name and all(x in l for x in labels)]
    if not hits and absent is not None: return absent
    assert len(hits) == 1, f"{name} {labels}: {len(hits)} series"
    return hits[0]
port = f'port="{sport}"'
served = s1[("platoon_requests_total", "")] - s0[("platoon_requests_total", "")]
counted = one(e1, "platoon_requests_server_time_seconds_count", port) - \
          one(e0, "platoon_requests_server_time_seconds_count", port, absent=0)  # no request before the load
print(f"requests between the scrapes: exporter {counted:.0f}, server {served:.0f}")
# The server counts its scrape s1 before answering it; the exporter sees s0 complete.
assert abs(counted - served) <= max(2, 0.005 * served), "exporter's count is not the server's"
remote = f':{mport}"'
total = one(e1, "platoon_requests_backend_time_seconds_count", remote)
le = sorted((float(re.search(r'le="([^"]+)"', l).group(1)), v) for (n, l), v in e1.items()
            if n == "platoon_requests_backend_time_seconds_bucket" and remote in l and 'le="+Inf"' not in l)
median_edge = next(edge for edge, v in le if v >= total / 2)
print(f"backend time: median at or below {median_edge * 1e3:g} ms (think time {think_ms:g} ms)")
assert think_ms / 1e3 <= median_edge <= 2 * think_ms / 1e3 + 0.0025, "backend median is not the think time"
wait_sum = one(e1, "platoon_requests_socket_wait_seconds_sum", port)
parts = sum(v for (n, l), v in e1.items() if n == "platoon_requests_socket_wait_by_state_seconds_total" and port in l)
print(f"socket wait: histogram sum {wait_sum * 1e3:.1f} ms, by state {parts * 1e3:.1f} ms")
# The histogram sums bucket midpoints (each within 1/128 of its value); the states are exact.
assert abs(wait_sum - parts) <= 0.01 * parts + 1e-4, "socket wait by state does not add up"
PY
kill "$exporter"; wait "$exporter" 2>/dev/null
start_exporter "$tmp/plain.log" --pid "$spid"
curl -sf "http://127.0.0.1:$eport/metrics" > "$tmp/plain" || fail "scrape"
grep -q '^platoon_requests' "$tmp/plain" && fail "request families without --requests"
echo PASS
