# Sourced by the shell tests that hold a recording's figures to /proc/stat read at the recording's
# own snapshot times (this file is not a test). Needs common.sh, $tmp and $tools.

# record_polled PID TRACE: records PID for 2 s at -i 0.5 into TRACE while tools/proc_poll.py reads
# /proc/stat every 10 ms into $tmp/poll.jsonl, at a real-time priority so that the polls keep
# their 10 ms beside busy CPUs; the polls begin before the first snapshot and end after the
# last. Then decodes the snapshots' stamps into TRACE.snaps (a JSON list, tools/trace_snapshots.py).
record_polled() {
  local target=$1 trace=$2 poller
  chrt -f 1 python3 "$tools/proc_poll.py" "$tmp/poll.jsonl" & poller=$!; pids+=($poller)
  sleep 0.3
  timeout 20 "$platoon" record --pid "$target" --duration 2 -i 0.5 -o "$trace" 2> "$tmp/rec.err" ||
    { cat "$tmp/rec.err"; fail "record"; }
  sleep 0.1
  kill "$poller"; wait "$poller"
  python3 "$tools/trace_snapshots.py" "$trace" > "$trace.snaps" || fail "could not decode the snapshots' stamps"
}
