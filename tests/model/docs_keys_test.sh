#!/usr/bin/env bash
# docs/top.md's key table against the key map (tui/dashboard/input/keymap.cpp), read where a
# person reads it: `platoon top` runs in tmux on a real target, live and then replaying a
# recording of it (which adds the replay-only keys); `?` opens the help the key map generates,
# and every key + action line it shows must be a row of the table, and every row a line it shows.
# So a key added to the map without a row in docs/top.md fails here, and so does a stale row.
set -uo pipefail
BUILD=${BUILD:-build}
bin=$(cd "$BUILD/bin" && pwd)
doc=$(cd "$(dirname "$0")/../.." && pwd)/docs/top.md
command -v tmux > /dev/null || { echo "needs tmux"; exit 77; }
[ -x "$bin/platoon" ] || { echo "FAIL: no $bin/platoon (build first)"; exit 1; }
[ -f "$doc" ] || { echo "FAIL: no $doc"; exit 1; }
tmp=$(mktemp -d /tmp/platoon-docskeys.XXXXXX)
sock=platoon-docs-keys-$$
tm() { tmux -L "$sock" "$@"; }
pids=()
. "$(dirname "$0")/../../scripts/lib/processes.sh"
cleanup() { tm kill-server 2> /dev/null; stop_pids; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
wait_for() {
  local end=$((SECONDS + ${2:-10}))
  while [ $SECONDS -lt $end ]; do tm capture-pane -p -t top | grep -Eq -- "$1" && return 0; sleep 0.1; done
  return 1
}

# help_lines OUT ARGS..: the key lines of top's help screen ("KEY<TAB>ACTION", one a line).
# The pane is 84 columns, the help box's width, so nothing of the table shows beside the box.
help_lines() {
  local out=$1; shift
  tm -f /dev/null new-session -d -s top -x 84 -y 40 \
    "LANG=C.UTF-8 TERM=screen-256color $bin/platoon top $*; sleep 30"
  wait_for 'TID' 15 || { tm capture-pane -p -t top; fail "top $* showed no table"; }
  tm send-keys -t top '?'
  wait_for 'platoon top: keys' || { tm capture-pane -p -t top; fail "? did not open the help"; }
  tm capture-pane -p -t top > "$tmp/pane.txt"
  tm kill-server
  # Inside the box: label fitted to 10 columns, a space, the action; a blank line ends the keys.
  python3 - "$tmp/pane.txt" > "$out" << 'EOF'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
start = next(i for i, l in enumerate(lines) if "platoon top: keys" in l)
for l in lines[start + 1:]:
    a, b = l.find("\u2502"), l.rfind("\u2502")
    inner = l[a + 1:b].rstrip() if 0 <= a < b else ""
    if not inner:
        break
    print(inner[:10].strip() + "\t" + inner[11:].strip())
EOF
  [ -s "$out" ] || { cat "$tmp/pane.txt"; fail "no key lines in the help of top $*"; }
}

# The target: an idle platoon-mock (it ends on the SIGINT stop_pids sends). procfs, so the test
# needs neither root nor BPF.
"$bin/platoon-mock" --port 0 --think-time-ms 1 --threads 1 > "$tmp/mock.log" 2>&1 & target=$!; pids+=($target)
[ -n "$(port_of "$tmp/mock.log")" ] || fail "platoon-mock did not start"
help_lines "$tmp/live.txt" --pid "$target" --procfs
"$bin/platoon" record --pid "$target" --procfs -i 0.2 -d 1 -q -o "$tmp/r.trace" || fail "record"
help_lines "$tmp/replay.txt" --replay "$tmp/r.trace"

# The key table of docs/top.md: the rows under the header "| key | action |", key in backticks.
python3 - "$doc" > "$tmp/doc.txt" << 'EOF'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
start = next(i for i, l in enumerate(lines) if re.match(r"\|\s*key\s*\|\s*action\s*\|", l))
for l in lines[start + 2:]:
    if not l.startswith("|"):
        break
    cells = [c.strip() for c in l.strip().strip("|").split("|")]
    print(cells[0].strip("`") + "\t" + cells[1])
EOF
[ -s "$tmp/doc.txt" ] || fail "no key table (| key | action |) in $doc"

sort -u "$tmp/live.txt" "$tmp/replay.txt" > "$tmp/screen.txt"
sort -u "$tmp/doc.txt" > "$tmp/docs.txt"
missing=$(comm -23 "$tmp/screen.txt" "$tmp/docs.txt")
stale=$(comm -13 "$tmp/screen.txt" "$tmp/docs.txt")
[ -z "$missing" ] || fail "keys on the help screen but not in docs/top.md's table:
$missing"
[ -z "$stale" ] || fail "rows in docs/top.md's key table that the help screen does not show:
$stale"
echo "docs/top.md lists all $(wc -l < "$tmp/screen.txt") keys of the help screen" \
  "($(wc -l < "$tmp/live.txt") live, $(wc -l < "$tmp/replay.txt") in replay)"
