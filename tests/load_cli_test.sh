#!/usr/bin/env bash
# platoon-load's command line: --help, exit code 2 with one line on bad input, and a short run
# against a port nobody listens on (connect errors counted, results still printed, exit 0).
set -euo pipefail
BUILD=${BUILD:-build}
bin="$BUILD/bin/platoon-load"
if [ ! -x "$bin" ]; then echo "skip: $bin not built"; exit 77; fi
fail() { echo "FAIL: $*"; exit 1; }

"$bin" --help | grep -q -- '--rate' || fail "--help does not mention --rate"

expect_usage_error() {
  local err rc=0
  err=$("$bin" "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -eq 2 ] || fail "'$*' exited $rc, want 2"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "'$*' printed more than one line: $err"
  case "$err" in "platoon-load: "*) ;; *) fail "'$*' error does not start with 'platoon-load: ': $err" ;; esac
  echo "ok (exit 2): $* -> $err"
}
expect_usage_error --url http://127.0.0.1:1/ --rate 0
expect_usage_error --url 'http://127.0.0.1:70000/'
expect_usage_error --url http://127.0.0.1:1/ -c 1 -t 4
expect_usage_error --url http://127.0.0.1:1/ -d never
expect_usage_error --rate 100

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
json=$(mktemp)
trap 'rm -f "$json"' EXIT
out=$("$bin" --url "http://127.0.0.1:$port/" --rate 200 -c 4 -t 2 -d 0.5 --json "$json")
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
