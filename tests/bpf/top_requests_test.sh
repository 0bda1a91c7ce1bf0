#!/usr/bin/env bash
# platoon top with a request column on platoon-server under a fixed-rate load: the header's request rate is
# the rate platoon-load achieved, and the carriers' req/s add up to twice it (each request is read
# once from the client and once as the backend's reply, by one of the two carriers).
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
use_tmp topreq
require_root
rate=1000
start_mock
start_server --carriers 2
start_load --rate "$rate" --connections 20 --threads 1 --duration 8 --json "$tmp/load.json"
sleep 0.5
timeout 30 "$bin/platoon" top --pid "$spid" --columns requests_per_s --batch -n 4 -i 1 > "$tmp/top.txt" 2> "$tmp/top.err" ||
  { cat "$tmp/top.err"; fail "top exit status"; }
# The last interval: its header line and the carriers' rows.
awk '/^platoon top/ { block = "" } { block = block $0 "\n" } END { printf "%s", block }' "$tmp/top.txt" > "$tmp/last.txt"
cat "$tmp/last.txt"
python3 - "$tmp/last.txt" "$rate" <<'PY' || fail "top's request rates disagree with the load"
import re, sys
text = open(sys.argv[1]).read(); rate = float(sys.argv[2])
def number(s):
    return float(s[:-1]) * 1000 if s.endswith("k") else float(s)
m = re.search(r"^requests (\S+)/s  server time p50 (\S+)ms p99 (\S+)ms", text, re.M)
assert m, "no requests line in the header"
header = number(m.group(1))
lines = text.splitlines()
head = next(i for i, l in enumerate(lines) if l.lstrip().startswith("TID"))
at = lines[head].split().index("req/s")
carriers = [number(l.split()[at]) for l in lines[head + 1:] if "carrier-" in l]
print(f"header {header:.0f}/s, carriers {carriers}, load {rate:.0f}/s")
assert len(carriers) == 2, "two carriers"
assert abs(header - rate) <= 0.05 * rate, "header rate is not the load's"
assert abs(sum(carriers) - 2 * rate) <= 0.1 * rate, "carriers' req/s do not add up to the requests and replies"
PY
echo PASS
