#!/usr/bin/env bash
# platoon-load's command line: --help, exit code 2 with one line on bad input, and a short run
# against a port nobody listens on (connect errors counted, results still printed, exit 0).
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
PY
echo PASS
