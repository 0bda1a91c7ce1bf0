#!/usr/bin/env bash
# platoon-load's command line: --help, exit code 2 with one line on bad input, a short run
# against a port nobody listens on (connect errors counted, results still printed, exit 0), and
# a run against platoon-mock with a 20 ms think time whose --json percentile spectrum is the
# text output's spectrum tick for tick, and no request in it faster than the mock's think time.
set -euo pipefail
. "$(dirname "$0")/../lib/common.sh"
load=$bin/platoon-load
[ -x "$load" ] || skip "skip: $load not built"
use_tmp load-cli

"$load" --help > "$tmp/help.txt" || fail "--help exit status"
grep -q -- '--rate' "$tmp/help.txt" || fail "--help does not mention --rate"

expect_usage_error() { expect_error --status 2 '^platoon-load: ' "$load" "$@"; }
expect_usage_error --url http://127.0.0.1:1/ --rate 0
expect_usage_error --url 'http://127.0.0.1:70000/'
expect_usage_error --url http://127.0.0.1:1/ -c 1 -t 4
expect_usage_error --url http://127.0.0.1:1/ -d never
expect_usage_error --rate 100

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
json=$tmp/load.json
out=$("$load" --url "http://127.0.0.1:$port/" --rate 200 -c 4 -t 2 -d 0.5 --json "$json")
echo "$out"
grep -q '^Running 0.5s test @ http://127.0.0.1:' <<<"$out" || fail "no Running line"
grep -q 'Socket errors: connect [1-9]' <<<"$out" || fail "no connect errors reported"
grep -q '^Requests/sec:' <<<"$out" || fail "no Requests/sec line"
python3 - "$json" <<'PY' || fail "bad JSON"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("requests", "errors", "timeouts", "duration_s", "rate", "latency_us", "uncorrected_latency_us",
          "errors_by_kind", "target_rate", "connections", "threads", "mean_us"):
    assert k in d, k
assert d["requests"] == 0 and d["errors_by_kind"]["connect"] >= 50, d
assert d["latency_spectrum_us"] == [] and d["uncorrected_latency_spectrum_us"] == [], "a spectrum without requests"
PY

start_mock --think-time-ms 20 --threads 1
"$load" --url "http://127.0.0.1:$mport/fruits" --rate 100 -c 4 -t 1 -d 1 --latency --json "$json" > "$tmp/run.txt" \
  || fail "the run against the mock failed"
python3 - "$json" "$tmp/run.txt" <<'PY' || fail "the JSON spectrum disagrees with the mock or the text"
import json, sys
d = json.load(open(sys.argv[1]))
think_us = 20_000
for key, title in (("latency_spectrum_us", "Recorded"), ("uncorrected_latency_spectrum_us", "Uncorrected")):
    spec = d[key]
    pct = [p for p, _ in spec]
    val = [v for _, v in spec]
    assert len(spec) >= 10, (key, len(spec))
    assert pct[0] == 0 and pct[-1] == 100 and all(a < b for a, b in zip(pct, pct[1:])), (key, pct)
    assert all(a <= b for a, b in zip(val, val[1:])), (key, "values fall")
    # The mock answers each request after sleeping 20 ms: no latency below that (a bucket's
    # highest equivalent is at most 1/1000 above its values, never below).
    assert val[0] >= think_us, (key, "faster than the mock's think time", val[0])
    # The text's spectrum for the same histogram (milliseconds, percentile as a fraction).
    text = open(sys.argv[2]).read()
    block = text[text.index(f"HdrHistogram - {title}"):]
    block = block[block.index("Detailed Percentile spectrum:"):block.index("#[Mean")]
    rows = [l.split() for l in block.splitlines()[3:] if l.strip()]
    assert len(rows) == len(spec), (key, len(rows), len(spec))
    for (ms, q, _, _), (p, v) in zip(rows, spec):
        assert abs(float(q) * 100 - p) < 1e-3 and abs(float(ms) * 1000 - v) <= 0.5 + v * 1e-3, (key, ms, q, p, v)
print("spectrum ticks", len(d["latency_spectrum_us"]), "p0", d["latency_spectrum_us"][0][1], "us; the mock thinks 20,000 us")
PY
echo PASS
