#!/usr/bin/env bash
# USDT probes of the runtime (provider "platoon"):
#  1. readelf: the binary has a stapsdt note for each of the eight probes, each with a
#     semaphore (non-zero address);
#  2. bpftrace: attached to a running process (-p PID, which raises the semaphores of that
#     process), drain_start and poll fire, with carrier index 0 or 1 as first argument.
# Builds nothing: uses $BUILD/bin/runtime_bench (BUILD defaults to build).
# Exit 0 pass, 1 fail, 77 skip (not root, or no bpftrace).
set -uo pipefail

BIN=$(readlink -f "$BUILD/bin/runtime_bench" 2>/dev/null || true)
PROBES="poll drain_start drain_end drain steal park unpark carrier_sleep carrier_wake"
. "$(dirname "$0")/../lib/common.sh"

[ -n "$BIN" ] && [ -x "$BIN" ] || fail "$BUILD/bin/runtime_bench not built (make BUILD=$BUILD)"
command -v readelf >/dev/null || fail "readelf not found (binutils)"

# ---- 1. the notes ----
notes=$(readelf -n "$BIN" | awk '
  /Provider:/ { prov = $2 }
  /Name:/     { name = $2 }
  /Semaphore:/ { for (i = 1; i <= NF; i++) if ($i == "Semaphore:") sem = $(i + 1); print prov, name, sem }')
echo "stapsdt notes:"
echo "$notes" | sed 's/^/  /'
for p in $PROBES; do
  line=$(echo "$notes" | awk -v p="$p" '$1 == "platoon" && $2 == p' | head -1)
  [ -n "$line" ] || fail "no stapsdt note platoon:$p in $BIN"
  sem=$(echo "$line" | awk '{print $3}')
  [ -n "$sem" ] && [ $((sem)) -ne 0 ] || fail "probe platoon:$p has no semaphore ($line)"
done
echo "ok: all eight platoon probes have notes with semaphores"

# ---- 2. live tracing ----
[ "$(id -u)" = 0 ] || skip "SKIP: live tracing needs root"
require_cmd bpftrace "SKIP: bpftrace not installed"
mountpoint -q /sys/kernel/tracing 2>/dev/null || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
ulimit -l unlimited 2>/dev/null || ulimit -l 65536 2>/dev/null || true

tmp=$(mktemp -d)
demo_pid=
cleanup() {
  [ -n "$demo_pid" ] && kill "$demo_pid" 2>/dev/null && wait "$demo_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

"$BIN" --usdt-demo 15 > "$tmp/demo.out" 2>&1 &
demo_pid=$!
for _ in $(seq 50); do
  grep -q 'usdt-demo: pid' "$tmp/demo.out" && break
  sleep 0.1
done
grep -q 'usdt-demo: pid' "$tmp/demo.out" || { cat "$tmp/demo.out"; fail "the demo did not start"; }

script="
usdt:$BIN:platoon:drain_start { @drain_start[arg0] = count(); @depth_max = max(arg1); }
usdt:$BIN:platoon:drain_start /arg1 < 1/ { @depth_empty = count(); }
usdt:$BIN:platoon:poll        { @poll[arg0] = count(); @events_max = max(arg1); }
usdt:$BIN:platoon:unpark      { @unpark[arg0] = count(); }
interval:s:2 { exit(); }"
timeout --signal=KILL 20 bpftrace -p "$demo_pid" -e "$script" > "$tmp/bt.out" 2> "$tmp/bt.err"
st=$?
echo "bpftrace (status $st):"
sed 's/^/  /' "$tmp/bt.out"
grep -v 'RLIMIT_MEMLOCK' "$tmp/bt.err" | sed 's/^/  stderr: /'
[ "$st" -eq 0 ] || fail "bpftrace failed"
kill -0 "$demo_pid" 2>/dev/null || fail "the traced process died"

# Map lines look like "@poll[1]: 1234" or "@depth_max: 7".
count_of() { awk -F'[][]|: ' -v m="@$1" '$1 == m { s += $NF } END { print s + 0 }' "$tmp/bt.out"; }
keys_of() { awk -F'[][]' -v m="@$1" '$1 == m { print $2 }' "$tmp/bt.out" | sort -u | tr '\n' ' '; }
value_of() { awk -v m="@$1:" '$1 == m { print $2 }' "$tmp/bt.out"; }

for p in drain_start poll; do
  n=$(count_of "$p")
  [ "$n" -gt 0 ] || fail "platoon:$p never fired (semaphore not raised, or probe site dead)"
  keys=$(keys_of "$p")
  for k in $keys; do
    case "$k" in 0|1) ;; *) fail "platoon:$p carrier argument $k, expected 0 or 1";; esac
  done
  echo "ok: platoon:$p fired $n times, carriers: $keys"
done
# (Not min() next to max() in one action: bpftrace 0.17 then emits a program the verifier rejects.)
dmax=$(value_of depth_max)
empty_drains=$(value_of depth_empty)
{ [ -n "$dmax" ] && [ "$dmax" -ge 1 ] && [ "$dmax" -le 100000 ] && [ "${empty_drains:-0}" -eq 0 ]; } ||
  fail "drain_start queue depth out of range: max=$dmax, drains with depth < 1: ${empty_drains:-0} (a drain starts only with work)"
echo "ok: drain_start queue depth 1..$dmax"
emax=$(value_of events_max)
{ [ -n "$emax" ] && [ "$emax" -ge 0 ] && [ "$emax" -le 100000 ]; } || fail "poll events out of range: max=$emax"
for k in $(keys_of unpark); do
  case "$k" in 0|1) ;; *) fail "platoon:unpark target carrier $k, expected 0 or 1";; esac
done
echo "ok: unpark fired $(count_of unpark) times, targets: $(keys_of unpark)"

# The semaphores drop when the tracer detaches: nothing to trace, so the demo goes on fine.
kill -0 "$demo_pid" 2>/dev/null || fail "the process died after bpftrace detached"
echo "PASS"
