#!/usr/bin/env bash
# Load fallbacks from the outside. A real one first: root stripped of every capability, which
# the kernel refuses BPF; the note and the report must carry the kernel's own words, taken from
# bpftool making the same request under the same stripped capabilities. Then older kernels, with
# PLATOON_INJECT_LOAD_FAIL simulating what the kernel lacks (bpf/collectors/features.hpp): no
# program set loads → procfs, with the reason in the note; the runtime probes fail → bpf without
# drain, named in the source line.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp fallback
require_root
require_cmd setpriv
require_cmd bpftool
work='i=0; while [ $i -lt 100 ]; do sleep 0.005; i=$((i+1)); done'

nocaps=(setpriv --inh-caps=-all --bounding-set=-all)
# The premise from /proc, not from platoon: under setpriv nothing is effective.
caps=$("${nocaps[@]}" sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
[[ $caps =~ ^0+$ ]] || fail "setpriv left capabilities ($caps)"
# What the kernel answers a BPF request without them, in bpftool's words ("Error: map create
# failed: Operation not permitted"); the pin path is off bpffs, so a map that did get created is
# not left behind.
"${nocaps[@]}" bpftool map create "$tmp/nopin" type array key 4 value 4 entries 1 name platoon_nocap 2> "$tmp/bpftool.err" &&
  fail "bpftool created a map without capabilities"
kernel_says=$(sed -n 's/^Error: map create failed: //p' "$tmp/bpftool.err")
[ -n "$kernel_says" ] || { cat "$tmp/bpftool.err"; fail "bpftool did not say why the map was refused"; }
"${nocaps[@]}" timeout 20 "$platoon" record -i 0.2 -o "$tmp/nocap.trace" -- sh -c "$work" 2> "$tmp/nocap.err" \
  || { cat "$tmp/nocap.err"; fail "record without capabilities"; }
grep "sampling /proc instead" "$tmp/nocap.err" | grep -qF -- "$kernel_says" ||
  { cat "$tmp/nocap.err"; fail "the fallback note does not carry the kernel's reason ($kernel_says)"; }
echo "ok note: $(grep -m1 'sampling /proc instead' "$tmp/nocap.err")"
"$platoon" report "$tmp/nocap.trace" > "$tmp/nocap.txt" || fail "report"
grep -q "source: procfs (lacks:" "$tmp/nocap.txt" || { head -5 "$tmp/nocap.txt"; fail "report source is not procfs"; }
grep "^note: bpf:" "$tmp/nocap.txt" | grep -qF -- "$kernel_says" ||
  { grep -i note "$tmp/nocap.txt"; fail "report notes lack the kernel's reason ($kernel_says)"; }
echo "ok report: $(grep -m1 '^note: bpf:' "$tmp/nocap.txt")"

PLATOON_INJECT_LOAD_FAIL=tp_btf,raw_tp "$platoon" record -i 0.2 -o "$tmp/old.trace" -- sh -c "$work" 2> "$tmp/old.err" \
  || { cat "$tmp/old.err"; fail "record on a kernel where nothing loads"; }
grep -q "do not load on this kernel.*sampling /proc instead" "$tmp/old.err" || { cat "$tmp/old.err"; fail "no fallback note with the reason"; }
echo "ok note: $(grep -m1 'do not load' "$tmp/old.err")"
"$platoon" report "$tmp/old.trace" > "$tmp/old.txt" || fail "report"
grep -q "source: procfs (lacks:" "$tmp/old.txt" || { head -5 "$tmp/old.txt"; fail "report source is not procfs"; }
grep -q "raw_tp programs failed to load" "$tmp/old.txt" || { grep -i note -A5 "$tmp/old.txt"; fail "report notes lack the reason"; }
echo "ok report: $(grep -m1 'source:' "$tmp/old.txt")"

PLATOON_INJECT_LOAD_FAIL=usdt "$platoon" record -i 0.2 -o "$tmp/nousdt.trace" -- sh -c "$work" 2> "$tmp/nousdt.err" \
  || { cat "$tmp/nousdt.err"; fail "record without usdt"; }
"$platoon" report "$tmp/nousdt.trace" > "$tmp/nousdt.txt" || fail "report"
grep -q "source: bpf.*lacks: drain" "$tmp/nousdt.txt" || { head -5 "$tmp/nousdt.txt"; fail "source line does not name drain"; }
echo "ok report: $(grep -m1 'source:' "$tmp/nousdt.txt")"
echo "PASS"
