#!/usr/bin/env bash
# platoon top --batch (and top with stdout not a terminal): the table every interval as plain
# text for scripts; --iterations; bpf and procfs sources; a launched command ends the run;
# --no-io loads no epoll program; --replay --batch of a recording shows the same threads; bad
# input gives one-line errors.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
require_root
use_tmp topbatch
# top_error ARGS..: non-zero exit and exactly one line on stderr.
top_error() { expect_error '' "$platoon" top "$@"; }

top_error --pid 999999999 --batch
top_error --pid 1 --interval 0
top_error --pid 1 --interval soon
top_error --replay /etc/passwd
top_error --replay "$tmp/missing.trace"
top_error --replay /etc/passwd --pid 1
# No target is the whole machine now (top_machine_tui_test); two targets are a usage error.
top_error --batch --all --pid 1
top_error --batch --cgroup /no/such/group

start_mock
start_server --carriers 2
start_load --rate 2000 --connections 50 --threads 1 --duration 30

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

# held_progs PID: "SWITCH EPOLL", how many sched_switch and epoll programs PID holds (its fds'
# prog_id in /proc/PID/fdinfo, named by bpftool), once it holds any switch program (up to 5 s).
# Counting by holder, not machine-wide, leaves out other platoons on the machine.
epoll_pattern='^epoll_'
held_progs() {
  python3 - "$1" "$epoll_pattern" <<'PY'
import json, os, re, subprocess, sys, time
pid, epoll = sys.argv[1], sys.argv[2]
for _ in range(100):
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        break
    for fd in fds:
        try:
            m = re.search(r"^prog_id:\s*(\d+)", open(f"/proc/{pid}/fdinfo/{fd}").read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, check=True).stdout)
    names = [p.get("name", "") for p in progs if p["id"] in ids]
    switch = sum(1 for n in names if n.startswith("switch_"))
    if switch:
        print(switch, sum(1 for n in names if re.search(epoll, n)))
        sys.exit()
    time.sleep(0.05)
print(0, 0)
PY
}

# --columns: only those columns, and only the probes they need (no epoll program while it runs);
# an unknown key is a usage error.
"$bin/platoon" top --pid "$spid" --batch -n 3 -i 0.5 --columns cpu_pct,wait_pct > "$tmp/col.txt" & tpid=$!
read -r swtch progs < <(held_progs "$tpid")
wait "$tpid" || fail "--columns run"
header=$(grep -m1 '^ *TID' "$tmp/col.txt" | tr -s ' ')
[ "$header" = " TID NAME v%CPU %WAIT" ] || { cat "$tmp/col.txt"; fail "--columns cpu_pct,wait_pct: header '$header'"; }
[ "$swtch" -ge 1 ] || fail "--columns: no sched_switch program loaded while top ran"
[ "$progs" = 0 ] || fail "--columns cpu_pct,wait_pct: $progs epoll programs loaded"
echo "ok --columns: $header; epoll programs loaded: $progs"
expect_error --status 2 "unknown column 'bogus'" "$bin/platoon" top --pid "$spid" --batch -n 1 --columns bogus

# An IO column: the epoll programs are loaded (so the counts of none above and below are not a
# query that finds nothing).
"$bin/platoon" top --pid "$spid" --batch -n 3 -i 0.5 --columns cpu_pct,events_per_cycle > "$tmp/io.txt" & tpid=$!
read -r swtch progs < <(held_progs "$tpid")
wait "$tpid" || fail "IO column run"
[ "$swtch" -ge 1 ] && [ "$progs" -ge 1 ] || fail "an IO column: $swtch switch and $progs epoll programs loaded, expected epoll programs"
echo "ok an IO column: epoll programs loaded: $progs"

# --no-io: no epoll program even when a shown column would want one, the header says it lacks
# io, and the carriers' scheduler columns are still there.
"$bin/platoon" top --pid "$spid" --batch -n 3 -i 0.5 --no-io --columns cpu_pct,events_per_cycle > "$tmp/noio.txt" & tpid=$!
read -r swtch progs < <(held_progs "$tpid")
wait "$tpid" || fail "--no-io run"
[ "$swtch" -ge 1 ] && [ "$progs" = 0 ] || fail "--no-io: $swtch switch and $progs epoll programs loaded"
grep -q 'lacks:.*io' "$tmp/noio.txt" || { cat "$tmp/noio.txt"; fail "--no-io: the header does not say it lacks io"; }
row=$(grep -E "^ *[0-9]+ carrier-0 " "$tmp/noio.txt" | tail -1)
echo "$row" | grep -qE 'carrier-0 +[0-9.]+ +- *$' || { cat "$tmp/noio.txt"; fail "--no-io: carrier-0 row '$row'"; }
echo "ok --no-io: epoll programs loaded: $progs; $row"

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
