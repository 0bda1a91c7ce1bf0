#!/usr/bin/env bash
# platoon export of request records, from the outside: the synthetic recording that
# export_requests_test.cpp writes (six requests of chosen values) is exported by the program as
# requests-csv and perfetto; the perfetto file is decoded with protoc against the kept schema
# and nested into slices by tests/tools/perfetto_slices.py; tests/tools/check_request_export.py
# then compares both with the records as trace_events.py decodes them (a second reader of the
# trace format), and the counts with `platoon report`. A recording without requests gets the
# one-line error. PLATOON_REQUESTS_TRACE=FILE checks a real recording instead of the synthetic
# one (the report then counts a window: at most what the export holds).
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp exportreq
require_cmd protoc "protoc missing (scripts/install-deps.sh installs protobuf-compiler)"

# The GoogleTests' own verdicts are theirs to report: here they only write the recordings.
PLATOON_WRITE_REQUEST_TRACES=$tmp "$bin/model_tests" --gtest_filter='ExportRequestsTest.*' > "$tmp/gtest.log" 2>&1
[ -s "$tmp/requests.trace" ] && [ -s "$tmp/none.trace" ] || { cat "$tmp/gtest.log"; fail "model_tests wrote no recordings"; }
trace=${PLATOON_REQUESTS_TRACE:-$tmp/requests.trace}
exact=--exact
[ -n "${PLATOON_REQUESTS_TRACE:-}" ] && exact=

"$platoon" export "$trace" -f requests-csv -o "$tmp/r.csv" || fail "export requests-csv"
"$platoon" export "$trace" -f perfetto -o "$tmp/r.pftrace" || fail "export perfetto"
protoc -Itui/outputs --decode=perfetto.protos.Trace perfetto_trace.proto < "$tmp/r.pftrace" > "$tmp/r.txt" 2> "$tmp/protoc.err" ||
  { cat "$tmp/protoc.err"; fail "protoc cannot decode the export"; }
[ ! -s "$tmp/protoc.err" ] || { cat "$tmp/protoc.err"; fail "protoc complained"; }
python3 tests/tools/perfetto_slices.py < "$tmp/r.txt" > "$tmp/r.slices.json" || fail "nest the slices"
"$platoon" report "$trace" -f json > "$tmp/report.json" || fail "report"
python3 tests/tools/check_request_export.py "$trace" "$tmp/r.csv" "$tmp/r.slices.json" \
  --comms "$tmp/report.json" --report "$tmp/report.json" $exact || fail "the exports disagree with the records"

# No request records: one line, a non-zero exit, no file.
expect_error "no request records in $tmp/none.trace: record with --requests" \
  "$platoon" export "$tmp/none.trace" -f requests-csv -o "$tmp/n.csv"
[ ! -e "$tmp/n.csv" ] || fail "a failed export left its output"
echo PASS
