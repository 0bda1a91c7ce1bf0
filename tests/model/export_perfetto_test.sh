#!/usr/bin/env bash
# platoon export --format perfetto against independent decoders: a recording of platoon-server
# under load (two unpinned carriers: switches, wakings and migrations on both CPUs, epoll and
# drain counters) and one of a python that starts threads (sched_wakeup_new) are exported, decoded with
# protoc against the project's schema subset (tui/outputs/perfetto_trace.proto), and compared with
# the recordings' raw events as tests/tools/trace_events.py (a second reader of the trace format,
# written from docs/trace-format.md) counts them: per CPU and kind, per carrier counter track.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp perfetto
require_root
require_cmd protoc "protoc missing (scripts/install-deps.sh installs protobuf-compiler)"
decode() { protoc -Itui/outputs --decode=perfetto.protos.Trace perfetto_trace.proto < "$1"; }

start_mock
start_server --carriers 2
start_load --rate 3000 --connections 60 --threads 1 --duration 4
sleep 0.5
"$bin/platoon" record -q -i 0.5 --duration 2 --drain-events --pid "$spid" -o "$tmp/s.trace" || fail "record server"
"$bin/platoon" record -q -i 0.2 --duration 3 -o "$tmp/f.trace" -- python3 -c \
  'import threading, time
for _ in range(5):
    t = threading.Thread(target=time.sleep, args=(0.02,)); t.start(); t.join()' || fail "record python"

for t in s f; do
  "$bin/platoon" export "$tmp/$t.trace" --format perfetto -o "$tmp/$t.pftrace" || fail "export $t"
  decode "$tmp/$t.pftrace" > "$tmp/$t.txt" 2> "$tmp/$t.err" || { cat "$tmp/$t.err"; fail "protoc cannot decode $t.pftrace"; }
  [ ! -s "$tmp/$t.err" ] || { cat "$tmp/$t.err"; fail "protoc complained about $t.pftrace"; }
  python3 tests/tools/perfetto_counts.py < "$tmp/$t.txt" > "$tmp/$t.pf.json" || fail "parse decoded $t"
  python3 tests/tools/trace_events.py "$tmp/$t.trace" > "$tmp/$t.ev.json" || fail "count events of $t"
  "$bin/platoon" report "$tmp/$t.trace" --format json > "$tmp/$t.report.json" || fail "report $t"
done

python3 - "$tmp" "$spid" <<'PY' || fail "perfetto export does not match the recording"
import json, sys, time
tmp, spid = sys.argv[1], sys.argv[2]
KINDS = {"1": "sched_switch", "2": "sched_waking", "4": "sched_wakeup_new", "5": "sched_migrate_task"}
now = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
seen = {}
for t in ("s", "f"):
    pf = json.load(open(f"{tmp}/{t}.pf.json"))
    ev = json.load(open(f"{tmp}/{t}.ev.json"))
    want = {cpu: {KINDS[k]: n for k, n in kinds.items() if k in KINDS} for cpu, kinds in ev["by_cpu"].items()}
    want = {cpu: kinds for cpu, kinds in want.items() if kinds}
    print(f"{t}: recording {want}")
    print(f"{t}: perfetto  {pf['by_cpu']}")
    assert pf["by_cpu"] == want, "sched events per CPU differ"
    for kinds in want.values():
        for k, n in kinds.items():
            seen[k] = seen.get(k, 0) + n
    assert pf["out_of_order"] == 0, "events of a CPU out of time order"
    # BOOTTIME, like ftrace: within the last minute of this machine's boot clock.
    assert now - 60e9 < pf["first_ts"] <= pf["last_ts"] <= now, (pf["first_ts"], pf["last_ts"], now)
    report = json.load(open(f"{tmp}/{t}.report.json"))
    names = {(int(x["pid"]), int(x["tid"])): x["thread_name"] for x in pf["threads"]}
    for th in report["threads"]:
        assert names.get((th["pid"], th["tid"])) == th["comm"], f"no descriptor for {th['comm']} {th['tid']}"
    if t == "s":
        assert pf["processes"].get(spid) == "platoon-server", pf["processes"]
        carriers = [th for th in report["threads"] if th["comm"].startswith("carrier-")]
        assert len(carriers) == 2, [th["comm"] for th in report["threads"]]
        for c in carriers:
            tid = str(c["tid"])
            n_epoll = pf["counter_tracks"].get(f"{c['comm']} events per cycle", 0)
            n_drain = pf["counter_tracks"].get(f"{c['comm']} queue depth at drain", 0)
            print(f"{c['comm']}: {n_epoll} events-per-cycle samples (recording {ev['epoll_ok_by_tid'].get(tid)}), "
                  f"{n_drain} queue-depth samples (recording {ev['drain_by_tid'].get(tid)})")
            assert n_epoll == ev["epoll_ok_by_tid"].get(tid) > 0
            assert n_drain == ev["drain_by_tid"].get(tid) > 0
            assert pf["counter_tracks"].get(f"{c['comm']} %wait", 0) >= 3
print("kinds exported:", seen)
for k in ("sched_switch", "sched_waking", "sched_wakeup_new"):
    assert seen.get(k, 0) > 0, f"the workloads made no {k}"
PY

# The same server recording as Chrome JSON: every carrier's Running slices (two threads, both
# CPUs, thousands of switches) add up to the on-CPU time report gives it, within 1%.
"$bin/platoon" export "$tmp/s.trace" --format chrome -o "$tmp/s.json" 2> /dev/null || fail "export chrome"
python3 - "$tmp/s.json" "$tmp/s.report.json" <<'PY' || fail "chrome slices do not add up to run_ns"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
report = json.load(open(sys.argv[2]))
start = min(e["ts"] for e in ev if e["ph"] == "C" and e["name"] == "%wait")  # report's baseline
for t in report["threads"]:
    if not t["comm"].startswith("carrier-"):
        continue
    slices = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e["ph"] == "X" and e["tid"] == t["tid"]]
    on_ns = sum(max(0.0, b - max(a, start)) for a, b in slices) * 1e3
    diff = abs(on_ns - t["run_ns"]) / t["run_ns"] * 100
    print(f"chrome {t['comm']}: {len(slices)} slices, {on_ns / 1e6:.3f} ms vs report {t['run_ns'] / 1e6:.3f} ms ({diff:.4f}%)")
    assert len(slices) > 100 and diff <= 1.0
PY

# A recording without events gets a one-line error.
"$bin/platoon" record -q --no-events --duration 0.3 -o "$tmp/n.trace" -- sleep 0.1 || fail "record --no-events"
"$bin/platoon" export "$tmp/n.trace" --format perfetto -o "$tmp/n.pftrace" 2> "$tmp/n.err" && fail "no-events export should fail"
[ "$(wc -l < "$tmp/n.err")" -eq 1 ] && grep -q "perfetto export needs them" "$tmp/n.err" || { cat "$tmp/n.err"; fail "error line"; }
[ ! -e "$tmp/n.pftrace" ] || fail "a failed export left its output"
echo PASS
