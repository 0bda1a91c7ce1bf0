#!/usr/bin/env bash
# platoon export --format csv|chrome from the outside: a short recording of a CPU-bound shell
# loop, exported both ways and checked with python3 (CSV shape, Chrome JSON shape, the Running
# slices adding up to the on-CPU time report shows and never overlapping), plus the one-line
# errors on bad input.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/irq_time.sh"
use_tmp export
require_root

loop='i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'
"$platoon" record -q -i 0.2 --duration 1.5 -o "$tmp/T" -- sh -c "$loop" || fail "record"
# The second run's shell is named so that its comm needs RFC 4180 quoting in the CSV.
odd='a,"b'
cp "$(command -v sh)" "$tmp/$odd"
"$platoon" record -q -i 0.2 --duration 1.5 --no-events -o "$tmp/N" -- "$tmp/$odd" -c "$loop" || fail "record --no-events"
"$platoon" report "$tmp/T" --format json > "$tmp/report.json" || fail "report"

# 1. CSV: the header, one row per thread per interval (report's threads × snapshot pairs; the
#    shell is the only thread), numbers that parse.
"$platoon" export "$tmp/T" --format csv -o "$tmp/t.csv" || fail "export csv"
"$platoon" export "$tmp/N" --format csv -o "$tmp/n.csv" || fail "export csv of a --no-events trace"
irq_time_accounted && irq=1 || irq=0
IRQ_ACCOUNTED=$irq python3 - "$tmp/report.json" "$tmp/t.csv" "$tmp/n.csv" <<'PY' || fail "csv check"
import csv, json, os, sys
irq_accounted = os.environ["IRQ_ACCOUNTED"] == "1"
duration_s = json.load(open(sys.argv[1]))["duration_s"]
header = ("interval_start_s,interval_end_s,pid,tid,comm,cpu_pct,wait_pct,run_ns,wait_ns,"
          "switches_voluntary,switches_involuntary,migrations,io_cycles,io_events,events_per_cycle,"
          "drains,queue_depth_avg,runq_p50_us,runq_p99_us,wakeups_per_s,wait_contended_pct,"
          "wait_throttled_pct,wait_steal_pct,wait_irq_pct,wait_idle_exit_pct").split(",")
for path in sys.argv[2:]:
    rows = list(csv.reader(open(path, newline="")))
    assert rows[0] == header, rows[0]
    body = rows[1:]
    assert body, "no rows"
    intervals = sorted({(r[0], r[1]) for r in body}, key=lambda x: float(x[0]))
    per = {}
    for r in body:
        assert len(r) == len(header), r
        per.setdefault((r[0], r[1]), []).append(r[3])
        float(r[5]); int(r[7])
        # The wait split's parts add up to %wait (rounded to 3 decimals each). The irq part is
        # empty, not 0, where the kernel does not account IRQ time: it was not measured.
        if r[20] != "":
            assert (r[23] == "") == (not irq_accounted), ("wait_irq_pct", r[23], "kernel accounts IRQ time:", irq_accounted)
            assert abs(sum(float(x) for x in r[20:25] if x != "") - float(r[6])) < 0.01, r
    for k, tids in per.items():
        assert len(tids) == len(set(tids)), f"a thread twice in interval {k}"
    # The shell runs from the first interval to its exit: one row in each interval up to there.
    assert len(body) == sum(len(v) for v in per.values())
    assert float(intervals[0][0]) == 0.0, intervals[0]
    for (a, b), (c, _) in zip(intervals, intervals[1:]):
        assert b == c, "intervals are consecutive"
    shells = [r for r in body if r[4] in ("sh", 'a,"b')]
    assert len(shells) == len(intervals), "the shell: one row in every interval (it exits in the last)"
    if path.endswith("t.csv"):
        # The intervals cover the recording: the last ends where report's window ends.
        assert abs(float(intervals[-1][1]) - duration_s) < 0.06, (intervals[-1], duration_s)
    else:
        assert shells[0][4] == 'a,"b', "comm quoted per RFC 4180 and read back"
    print(f"ok csv {path.split('/')[-1]}: {len(body)} rows over {len(intervals)} intervals")
PY

# 2. Chrome JSON: parses, names the shell, and its Running slices add up to report's run_ns.
"$platoon" export "$tmp/T" --format chrome -o "$tmp/t.json" || fail "export chrome"
python3 - "$tmp/t.json" "$tmp/report.json" <<'PY' || fail "chrome check"
import json, sys
trace = json.load(open(sys.argv[1]))
report = json.load(open(sys.argv[2]))
assert trace["displayTimeUnit"] == "ns"
ev = trace["traceEvents"]
sh = [t for t in report["threads"] if t["comm"] == "sh"]
assert len(sh) == 1, report["threads"]
tid, run_ns = sh[0]["tid"], sh[0]["run_ns"]
assert any(e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] == tid and e["args"]["name"] == "sh" for e in ev)
assert any(e["ph"] == "M" and e["name"] == "process_name" for e in ev)
slices = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e["ph"] == "X" and e["tid"] == tid)
assert slices, "no Running slices"
for (a0, a1), (b0, b1) in zip(slices, slices[1:]):
    assert a1 <= b0 + 1e-3, f"slices overlap: [{a0}, {a1}] and [{b0}, {b1}]"
# report counts from the first snapshot, the slices from the first event, which can come a little
# earlier (the recorder attaches, then takes its baseline). The first %wait sample is stamped at
# that baseline: clip there (measured: then they agree to the ns). The slack, 1% plus 200 µs,
# covers a slice still open at the last snapshot and closed by an event after it (report stops
# at that snapshot): at most one scheduler tick or so for this single CPU-bound thread.
waits = [e["ts"] for e in ev if e["ph"] == "C" and e["name"] == "%wait"]
assert waits, "no %wait counters"
start = min(waits)
on_cpu_us = sum(max(0.0, b - max(a, start)) for a, b in slices)
diff_us = abs(on_cpu_us * 1e3 - run_ns) / 1e3
print(f"ok chrome: {len(slices)} slices, {on_cpu_us:.1f} us on CPU vs report {run_ns / 1e3:.1f} us (diff {diff_us:.1f} us)")
assert diff_us <= 0.01 * run_ns / 1e3 + 200, "slices do not add up to run_ns"
PY

# 3. Errors: one line, non-zero exit.
printf 'not a trace at all\n' > "$tmp/bad"
expect_error "no raw events (recorded with --no-events or --procfs): chrome export needs them" \
  "$platoon" export "$tmp/N" --format chrome -o "$tmp/n.json"
[ ! -e "$tmp/n.json" ] || fail "a failed export left its output behind"

expect_error "must be perfetto, chrome, csv or requests-csv" "$platoon" export "$tmp/T" --format xml -o "$tmp/x"
expect_error "output" "$platoon" export "$tmp/T" --format csv
expect_error "$tmp/missing" "$platoon" export "$tmp/missing" --format csv -o "$tmp/x"
expect_error "$tmp/bad" "$platoon" export "$tmp/bad" --format chrome -o "$tmp/x"
expect_error "$tmp/bad" "$platoon" export "$tmp/bad" --format csv -o "$tmp/x"
expect_error "cannot write $tmp/nodir/x" "$platoon" export "$tmp/T" --format csv -o "$tmp/nodir/x"
expect_error "cannot write $tmp/nodir/x" "$platoon" export "$tmp/T" --format chrome -o "$tmp/nodir/x"
[ ! -e "$tmp/x" ] || fail "a failed export left its output behind"
echo "PASS export_test"
