#!/usr/bin/env bash
# platoon top --batch (and top with stdout not a terminal): the table every interval as plain
# text for scripts; --iterations; bpf and procfs sources; a launched command ends the run;
# --replay --batch of a recording shows the same threads; bad input gives one-line errors.
set -uo pipefail
BUILD=${BUILD:-build}
bin=$BUILD/bin
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
tmp=$(mktemp -d /tmp/platoon-topbatch.XXXXXX)
pids=()
. "$(dirname "$0")/lib/processes.sh"
cleanup() { stop_pids; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
# expect_error ARGS..: non-zero exit and exactly one line on stderr.
expect_error() { "$bin/platoon" top "$@" > /dev/null 2> "$tmp/err" && fail "top $* succeeded"
                 [ "$(wc -l < "$tmp/err")" = 1 ] || { cat "$tmp/err"; fail "top $*: not one line"; }
                 echo "top $*: $(cat "$tmp/err")"; }

expect_error --pid 999999999 --batch
expect_error --pid 1 --interval 0
expect_error --pid 1 --interval soon
expect_error --replay /etc/passwd
expect_error --replay "$tmp/missing.trace"
expect_error --replay /etc/passwd --pid 1
expect_error --batch

"$bin/platoon-mock" --port 0 --think-time-ms 1 --threads 1 > "$tmp/mock.log" 2>&1 & pids+=($!)
mport=$(port_of "$tmp/mock.log"); [ -n "$mport" ] || fail "mock did not start"
"$bin/platoon-server" --port 0 --backend "127.0.0.1:$mport" --carriers 2 > "$tmp/server.log" 2>&1 & spid=$!; pids+=($spid)
sport=$(port_of "$tmp/server.log"); [ -n "$sport" ] || fail "server did not start"
"$bin/platoon-load" --url "http://127.0.0.1:$sport/fruits" --rate 2000 --connections 50 --threads 1 \
  --duration 30 > /dev/null 2>&1 & pids+=($!)

# Not a terminal: batch without asking; --iterations 2 gives two tables and exit 0.
start=$SECONDS
"$bin/platoon" top --pid "$spid" --interval 0.5 --iterations 2 > "$tmp/b.txt" || fail "batch exit status"
[ $((SECONDS - start)) -le 5 ] || fail "2 intervals of 0.5 s took $((SECONDS - start)) s"
[ "$(grep -c '^ *TID' "$tmp/b.txt")" = 2 ] || { cat "$tmp/b.txt"; fail "not two tables"; }
grep -q 'source bpf' "$tmp/b.txt" || fail "no source bpf"
for t in carrier-0 carrier-1; do
  row=$(grep -E "^ *[0-9]+ $t " "$tmp/b.txt" | tail -1); [ -n "$row" ] || fail "no $t row"
  echo "$row" | grep -qE '[0-9.]+k? +[0-9.]+ +[0-9]+ +[0-9]+q' || fail "$t: no IO cycles / drain batch: $row"
done
tail -8 "$tmp/b.txt"

# procfs: the same rows, and the header names what it lacks.
"$bin/platoon" top --pid "$spid" --procfs --batch -n 1 -i 0.5 > "$tmp/p.txt" || fail "procfs batch"
grep -q 'source procfs' "$tmp/p.txt" || fail "procfs: no source line"
grep -q 'lacks:.*io' "$tmp/p.txt" || fail "procfs: does not say what it lacks"
grep -qE '^ *[0-9]+ carrier-0 ' "$tmp/p.txt" || fail "procfs: no carrier-0"

# A launched command: top ends when it does.
"$bin/platoon" top --batch -i 0.25 -- sleep 1 > "$tmp/c.txt" 2> "$tmp/c.err" || fail "launched command run"
grep -q 'command exited' "$tmp/c.err" || { cat "$tmp/c.err"; fail "no 'command exited'"; }
# (The collector keeps the comm it first saw, before exec: "platoon" rather than "sleep".)
grep -qE '^ *[0-9]+ (sleep|platoon) ' "$tmp/c.txt" || fail "no row for the command"

# A recording replayed in batch: one table per recorded interval, same threads.
"$bin/platoon" record --pid "$spid" -i 0.5 -d 2 --no-events -q -o "$tmp/r.trace" || fail "record"
"$bin/platoon" top --replay "$tmp/r.trace" --batch > "$tmp/r.txt" || fail "replay batch"
n=$(grep -c '^ *TID' "$tmp/r.txt"); [ "$n" -ge 3 ] || fail "replay printed $n tables"
for t in carrier-0 carrier-1; do grep -qE "^ *[0-9]+ $t " "$tmp/r.txt" || fail "replay lacks $t"; done
grep -q 'replay 1/' "$tmp/r.txt" || fail "replay position not in the header"
echo PASS
