#!/usr/bin/env bash
# Quota throttling: platoon-server in a CPU cgroup with a quota of 20 ms per 100 ms,
# under load. doctor finds cpu_throttled, with throttled time within 10% of what cpu.stat's own
# counter grew by over the doctor's window (the load is steady, so cpu.stat's rate over a span
# bracketing the run, times the window, is the truth to hold it against); the carriers' wait is
# mostly throttled wait. Without the quota, same server and load: no cpu_throttled.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cgroups.sh"
use_tmp quota
require_root
cg=$(make_cpu_cgroup "platoon-quota-$$" 20000 100000) || skip "no cgroup cpu controller here"
cleanup() { stop_pids; remove_cgroup "$cg"; rm -rf "$tmp"; }

start_mock
start_server --carriers 2
cgroup_add_pid "$cg" "$spid" || fail "could not move the server into $cg"
start_load --rate 5000 --connections 40 --threads 1 --duration 40

# doctor_run NAME: doctor on the server for 5 s, cpu.stat read around it.
doctor_run() {
  sleep 1
  local t0 t1 n0 n1
  t0=$(date +%s%N); n0=$(cgroup_throttled_ns "$cg")
  "$platoon" doctor --pid "$spid" --duration 5 --format json > "$tmp/$1.json" 2> "$tmp/$1.err" ||
    { cat "$tmp/$1.err"; fail "doctor ($1)"; }
  t1=$(date +%s%N); n1=$(cgroup_throttled_ns "$cg")
  echo "$t0 $t1 $n0 $n1" > "$tmp/$1.stat"
}

doctor_run quota
python3 - "$tmp/quota.json" "$tmp/quota.stat" "$(basename "$cg")" <<'PY' || fail "quota run"
import json, sys
d = json.load(open(sys.argv[1]))
t0, t1, n0, n1 = map(int, open(sys.argv[2]).read().split())
f = [f for f in d["findings"] if f["id"] == "cpu_throttled"]
assert f, f"no cpu_throttled finding: {[x['id'] for x in d['findings']]}, not evaluated {d.get('not_evaluated')}"
assert d["source"] == "bpf", d["source"]
e = f[0]["evidence"]
assert e["cgroup"].endswith(sys.argv[3]), e["cgroup"]
assert abs(e["quota_cpus"] - 0.2) < 1e-6, e["quota_cpus"]
truth_ms = (n1 - n0) / (t1 - t0) * d["duration_s"] * 1e3
print(f"doctor: throttled {e['throttled_ms']} ms in {d['duration_s']} s, {e['throttled_periods']}/{e['periods']} periods;"
      f" cpu.stat rate x window: {truth_ms:.1f} ms; max throttled wait {e['max_throttled_wait_pct']}%")
assert truth_ms > 100, "the quota did not throttle the server"
assert abs(e["throttled_ms"] - truth_ms) <= 0.10 * truth_ms, "throttled time is not within 10% of cpu.stat's"
assert e["max_throttled_wait_pct"] > 10, "the carriers' throttled wait is not seen"
# doctor recognised platoon-server (its USDT probes) and words the remedy in its flags.
assert d["runtime"] == "platoon-runtime", d["runtime"]
assert "platoon-server --carriers 1" in f[0]["remedy"], f[0]["remedy"]
PY

set_cpu_quota "$cg" -1 100000 || fail "could not lift the quota"
doctor_run free
python3 - "$tmp/free.json" <<'PY' || fail "no-quota run"
import json, sys
d = json.load(open(sys.argv[1]))
ids = [f["id"] for f in d["findings"]]
print("without the quota:", ids)
assert "cpu_throttled" not in ids, "cpu_throttled without a quota"
PY
echo PASS
