#!/usr/bin/env bash
# platoon record --requests attached to platoon-server under a fixed-rate load: the server-side
# request count agrees with the server's own counter (/metrics) over the same span, every
# server-time percentile stays within what platoon-load measured from outside (the kernel's part
# of a request cannot be longer than the client's), and the backend time on the server's
# connections to platoon-mock is the mock's think time plus little. The exports of the recording
# hold every request it has.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp recreq
require_root
think_ms=2
start_mock --think-time-ms "$think_ms" --threads 2
start_server --carriers 2

"$bin/platoon" record -i 0.5 --requests --pid "$spid" -o "$tmp/s.trace" 2> "$tmp/rec.err" & rec=$!; pids+=($rec)
wait_started "$tmp/rec.err" recording record
grep -q "lacks.*requests\|requests:" "$tmp/rec.err" && { cat "$tmp/rec.err"; fail "requests not collected"; }
count() { awk '$1 == "platoon_requests_total" { printf "%d\n", $2 }' "$1"; }
curl -sf "http://127.0.0.1:$sport/metrics" > "$tmp/m0" || fail "scrape"
run_load --rate 2000 --connections 40 --threads 1 --duration 3 --json "$tmp/load.json" > /dev/null 2>&1 || fail "load"
curl -sf "http://127.0.0.1:$sport/metrics" > "$tmp/m1" || fail "scrape"
sleep 0.3
kill -INT "$rec"; wait "$rec" || { cat "$tmp/rec.err"; fail "record exit status"; }
"$bin/platoon" report "$tmp/s.trace" --format json > "$tmp/r.json" || fail "report"
"$bin/platoon" report "$tmp/s.trace" | sed -n '/^Requests/,$p'

# The scrapes are requests too: the server counts m1's before answering it, platoon sees m0's.
python3 - "$tmp/r.json" "$tmp/load.json" "$sport" "$mport" "$think_ms" \
  "$(( $(count "$tmp/m1") - $(count "$tmp/m0") ))" <<'PY' || fail "requests disagree with the server or the load"
import json, sys
r = json.load(open(sys.argv[1]))["requests"]; load = json.load(open(sys.argv[2]))
sport, mport, think_ms, served = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
servers = [s for s in r["server"] if s["port"] == sport]
assert len(servers) == 1, f"no single server row for port {sport}: {r['server']}"
s = servers[0]
seen = s["count"] + s["partial"]
print(f"server requests: platoon {s['count']} (+{s['partial']} partial), server's counter {served}, "
      f"load {load['requests']}; lost {r['lost']}")
assert r["lost"] == 0, "requests lost"
assert s["partial"] == 0, "connections made after the attach are not partial"
assert abs(seen - served) <= max(2, 0.005 * served), "server-side count off the server's own by more than 0.5%"
# Server time ends when the response begins, the client's latency when it is read: the kernel's
# part is the shorter, to within the histograms' 1/64 (platoon) and 1/1024 (platoon-load). Not
# the max: the recording also holds the scrapes, and requests the load gave up on at its end.
out = load["uncorrected_latency_us"]
for key in ("p50", "p99"):
    st = s["server_time_us"][key]
    print(f"  server time {key} {st:.1f} us, load uncorrected {key} {out[key]:.1f} us")
    assert st <= out[key] * (1 + 1 / 64) * (1 + 1 / 1024) + 1, f"server time {key} above the client's latency"
assert s["server_time_us"]["p50"] >= think_ms * 1000, "a request's server time includes the backend's think time"
clients = [c for c in r["client"] if c["remote"].endswith(f":{mport}")]
assert len(clients) == 1, f"no single client row for the mock: {r['client']}"
b = clients[0]["backend_time_us"]
print(f"backend time p50 {b['p50']:.1f} us p99 {b['p99']:.1f} us against a think time of {think_ms} ms")
assert think_ms * 1000 <= b["p50"] <= think_ms * 1000 * 1.5, "backend time p50 is not the mock's think time"
assert clients[0]["count"] >= 0.99 * served, "fewer backend requests than requests served"
PY

# The same recording exported: a CSV row and a Perfetto slice (with its phases and its flow to the
# reader) per request record, as tests/tools/check_request_export.py reads them. The recorder was
# started before any request, so the report's window (first to last snapshot) holds them all.
require_cmd protoc "protoc missing (scripts/install-deps.sh installs protobuf-compiler)"
"$bin/platoon" export "$tmp/s.trace" -f requests-csv -o "$tmp/s.csv" || fail "export requests-csv"
"$bin/platoon" export "$tmp/s.trace" -f perfetto -o "$tmp/s.pftrace" || fail "export perfetto"
protoc -Itui/outputs --decode=perfetto.protos.Trace perfetto_trace.proto < "$tmp/s.pftrace" > "$tmp/s.txt" || fail "protoc"
python3 tests/tools/perfetto_slices.py < "$tmp/s.txt" > "$tmp/s.slices.json" || fail "nest the slices"
python3 tests/tools/check_request_export.py "$tmp/s.trace" "$tmp/s.csv" "$tmp/s.slices.json" \
  --comms "$tmp/r.json" --report "$tmp/r.json" --exact || fail "the exports disagree with the records"
echo PASS
