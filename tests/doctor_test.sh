#!/usr/bin/env bash
# platoon doctor against real runs: scripts/run-benchmark.sh --record records platoon-server
# under 4,000 req/s twice, "unpinned" (2 carriers, server, mock and load all free on both CPUs:
# the carriers wait behind the mock and the load and move between CPUs) and "pinned" (1 carrier
# pinned, the server alone on CPU 1, mock, load and recorder on CPU 0). Doctor must report
# carrier_waiting and carrier_migrating for the first and neither for the second, and --vs must
# call the pinned run healthier. Then: a --no-events and a procfs recording name the checks they
# cannot answer, a live --pid watch, and the one-line errors on bad input.
set -uo pipefail
. "$(dirname "$0")/lib/common.sh"
use_tmp doctor
require_root
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (one for the pinned server)"
for b in platoon platoon-server platoon-mock platoon-load; do [ -x "$bin/$b" ] || fail "$bin/$b missing (make)"; done

bench() {  # NAME ARGS..: one benchmark run recorded to $tmp/NAME.trace
  local name=$1; shift
  scripts/run-benchmark.sh --build "$BUILD" --rate 4000 --connections 50 --warmup 1 --duration 4 --no-pidstat \
    --record "$tmp/$name.trace" --output-dir "$tmp/$name" "$@" > "$tmp/$name.log" 2>&1 \
    || { tail -5 "$tmp/$name.log"; fail "run-benchmark.sh ($name)"; }
}
bench unpinned --threads 2 --load-cpuset 0,1 --server-cpuset 0,1 --mock-cpuset 0,1
# The pinned layout assumes CPU 1 is the server's alone. This machine is shared (other tests run
# concurrently): when the pinned carrier waited behind tasks of none of this run's processes (its
# mock and load are on CPU 0, so whatever ran on CPU 1 was foreign), the premise did not hold and
# the run is repeated, up to three times; a pinned run disturbed by its own processes fails.
for attempt in 1 2 3; do
  bench pinned --threads 1 --pin --load-cpuset 0 --server-cpuset 1 --mock-cpuset 0
  "$platoon" doctor "$tmp/pinned.trace" --format json > "$tmp/pinned.json" || fail "doctor pinned (json)"
  python3 - "$tmp/pinned.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
w = [f for f in d["findings"] if f["id"] == "carrier_waiting"]
if not w:
    sys.exit(0)
behind = w[0]["evidence"].get("waited_behind", [])
foreign = [f"{p['comm']} (pid {p['pid']}, {p['share_pct']}%)" for p in behind if p["where"] == "outside the target"]
print(f"pinned carrier waited {w[0]['evidence']['max_contended_wait_pct']}% behind", ", ".join(foreign) or "its own process")
sys.exit(3 if foreign else 1)
PY
  st=$?
  [ "$st" -eq 0 ] && break
  [ "$st" -eq 3 ] || fail "the pinned carrier waited behind its own process"
  # Foreign work on CPU 1 three times in a row (a CPU hog, other sessions): the premise does
  # not hold on this machine now, which says nothing about doctor: skipped, not failed.
  [ "$attempt" -lt 3 ] || { echo "SKIP: CPU 1 was busy with other work in three pinned runs in a row: cannot test here now"; exit 77; }
  echo "CPU 1 was not the server's alone (attempt $attempt): repeating the pinned run"
done

for r in unpinned pinned; do
  "$platoon" doctor "$tmp/$r.trace" --format json > "$tmp/$r.json" || fail "doctor $r (json)"
  "$platoon" doctor "$tmp/$r.trace" > "$tmp/$r.txt" || fail "doctor $r (text)"
done
"$platoon" doctor "$tmp/unpinned.trace" --vs "$tmp/pinned.trace" > "$tmp/vs.txt" || fail "doctor --vs"
"$platoon" doctor "$tmp/unpinned.trace" --vs "$tmp/pinned.trace" --format json > "$tmp/vs.json" || fail "doctor --vs json"
"$platoon" doctor "$tmp/pinned.trace" --vs "$tmp/unpinned.trace" --format json > "$tmp/sv.json" || fail "doctor --vs json (swapped)"

python3 - "$tmp" <<'PY' || { cat "$tmp/unpinned.txt" "$tmp/pinned.txt"; fail "findings"; }
import json, sys
tmp = sys.argv[1]
un, pin = (json.load(open(f"{tmp}/{r}.json")) for r in ("unpinned", "pinned"))
for d in (un, pin):
    assert isinstance(d["findings"], list)
    for f in d["findings"]:
        assert set(f) >= {"id", "severity", "threads", "evidence", "threshold", "remedy"}, f
        assert f["severity"] in ("info", "warn", "critical")
        assert isinstance(f["evidence"], dict) and isinstance(f["threshold"], dict)
ids = lambda d: {f["id"] for f in d["findings"]}
def show(name, d):
    k = d["key_numbers"]
    print(f"{name}: findings {sorted(ids(d))}; carriers {d['carriers']}; max %wait {k.get('max_carrier_wait_pct')} "
          f"(contended {k.get('max_carrier_contended_wait_pct')}); migrations/s {k.get('carrier_migrations_per_s')}; "
          f"events/cycle {k.get('events_per_cycle')} (after long waits {k.get('events_per_cycle_after_long_wait')}, "
          f"short {k.get('events_per_cycle_after_short_wait')})")
show("unpinned", un)
show("pinned", pin)
assert {"carrier_waiting", "carrier_migrating"} <= ids(un), ids(un)
assert not ({"carrier_waiting", "carrier_migrating"} & ids(pin)), ids(pin)
assert un["carriers"] == ["carrier-0", "carrier-1"], un["carriers"]
assert len(pin["carriers"]) == 1 and pin["carriers"][0].startswith("carrier-0"), pin["carriers"]
# The unpinned carriers wait behind the mock and the load: named, outside the target.
w = next(f for f in un["findings"] if f["id"] == "carrier_waiting")
who = {p["comm"] for p in w["evidence"]["waited_behind"]} | {p["comm"] for p in w["evidence"]["preempted_by"]}
assert who & {"mock-loop-0", "platoon-mock", "platoon-load"}, who
m = next(f for f in un["findings"] if f["id"] == "carrier_migrating")
assert all(len(c["cpu_distribution"]) == 2 for c in m["evidence"]["carriers"]), m
# Raw events were recorded: the platoon effect was evaluated in both runs.
for d in (un, pin):
    assert "platoon_effect" not in {n["id"] for n in d["not_evaluated"]}, d["not_evaluated"]
vs, sv = json.load(open(f"{tmp}/vs.json")), json.load(open(f"{tmp}/sv.json"))
assert vs["healthier"] == "b" and vs["healthier_file"].endswith("pinned.trace"), vs["healthier"]
assert sv["healthier"] == "a", sv["healthier"]
assert vs["why"], vs
print("vs:", vs["healthier_file"].rsplit("/", 1)[-1], "healthier:", "; ".join(vs["why"]))
PY
grep -q '^\[\(WARN\|CRITICAL\)\] carrier_waiting' "$tmp/unpinned.txt" || fail "text: no carrier_waiting block"
grep -q '^  remedy: ' "$tmp/unpinned.txt" || fail "text: no remedy line"
grep -q '^healthier: B (.*pinned.trace)' "$tmp/vs.txt" || { cat "$tmp/vs.txt"; fail "--vs text does not name B"; }
grep -q 'max carrier %wait' "$tmp/vs.txt" || fail "--vs text: no side-by-side numbers"
echo "ok text and --vs"

# A server of our own for the remaining sources, under a light load while it is watched.
start_mock
start_server --carriers 2

"$platoon" record -q --no-events -i 0.3 --duration 1 --pid "$spid" -o "$tmp/noev.trace" || fail "record --no-events"
"$platoon" record -q --procfs -i 0.3 --duration 1 --pid "$spid" -o "$tmp/procfs.trace" || fail "record --procfs"
"$platoon" doctor "$tmp/noev.trace" --format json > "$tmp/noev.json" || fail "doctor --no-events trace"
"$platoon" doctor "$tmp/procfs.trace" --format json > "$tmp/procfs.json" || fail "doctor procfs trace"
"$platoon" doctor "$tmp/procfs.trace" > "$tmp/procfs.txt" || fail "doctor procfs trace (text)"
start_load --rate 1000 --connections 10 --threads 1 --duration 3
"$platoon" doctor --pid "$spid" --duration 1.5 --format json > "$tmp/live.json" || fail "doctor --pid"
python3 - "$tmp" <<'PY' || fail "sources"
import json, sys
tmp = sys.argv[1]
ne = lambda d: {n["id"]: n["reason"] for n in d["not_evaluated"]}
noev, procfs, live = (json.load(open(f"{tmp}/{n}.json")) for n in ("noev", "procfs", "live"))
assert "raw events" in ne(noev).get("platoon_effect", ""), noev["not_evaluated"]
assert procfs["source"] == "procfs" and {"platoon_effect", "poller_competing"} <= set(ne(procfs)), procfs
assert procfs["carriers"] == ["carrier-0", "carrier-1"], procfs["carriers"]
assert live["source"] == "bpf" and "platoon_effect" not in ne(live), live
assert live["carriers"] == ["carrier-0", "carrier-1"] and isinstance(live["findings"], list), live
print("ok --no-events, procfs and live: not evaluated =", sorted(ne(noev)), sorted(ne(procfs)), sorted(ne(live)))
PY
grep -q '^not evaluated: platoon_effect' "$tmp/procfs.txt" || fail "procfs text does not say what was not evaluated"

# --comm finds the server by name; -- CMD watches a command and stops when it ends (long before
# --duration), its exit status noted.
"$platoon" doctor --comm platoon-server --duration 1 --format json > "$tmp/comm.json" || fail "doctor --comm"
start=$(date +%s%N)
"$platoon" doctor --duration 20 --format json -- sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done' \
  > "$tmp/cmd.json" 2> "$tmp/cmd.err" || { cat "$tmp/cmd.err"; fail "doctor -- CMD"; }
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
python3 - "$tmp" "$took_ms" <<'PY' || fail "--comm / -- CMD"
import json, sys
tmp, took_ms = sys.argv[1], int(sys.argv[2])
comm, cmd = (json.load(open(f"{tmp}/{n}.json")) for n in ("comm", "cmd"))
assert comm["carriers"] == ["carrier-0", "carrier-1"], comm["carriers"]
assert cmd["source"] == "bpf" and isinstance(cmd["findings"], list) and cmd["duration_s"] < 15, cmd
assert took_ms < 15000, f"-- CMD took {took_ms} ms: it did not stop with the command"
print(f"ok --comm (carriers {comm['carriers']}) and -- CMD ({cmd['duration_s']} s, {took_ms} ms, "
      f"findings {[f['id'] for f in cmd['findings']]})")
PY

: > "$tmp/empty"
head -c 200 "$tmp/pinned.trace" > "$tmp/stub.trace"
expect_error --status 1 '^platoon doctor: .*No such file' "$platoon" doctor "$tmp/missing.trace"
expect_error --status 1 '^platoon doctor: .*not a platoon trace' "$platoon" doctor /etc/passwd
expect_error --status 1 '^platoon doctor: .*not a platoon trace' "$platoon" doctor "$tmp/empty"
expect_error --status 1 '^platoon doctor: .*no snapshot\|^platoon doctor: .*one snapshot\|^platoon doctor: .*META' "$platoon" doctor "$tmp/stub.trace"
expect_error --status 1 '^platoon doctor: .*not a platoon trace' "$platoon" doctor "$tmp/pinned.trace" --vs /etc/passwd
echo PASS
