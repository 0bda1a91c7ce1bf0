#!/usr/bin/env bash
# Older kernels (issue 12, defect 8) from the outside, with PLATOON_INJECT_LOAD_FAIL simulating
# what the kernel lacks (bpf/collectors/features.hpp): no program set loads → procfs, with libbpf's reason
# in the note; the runtime probes fail → bpf without drain, named in the source line.
set -uo pipefail
. "$(dirname "$0")/lib/common.sh"
use_tmp fallback
require_root
work='i=0; while [ $i -lt 100 ]; do sleep 0.005; i=$((i+1)); done'

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
