#!/usr/bin/env bash
# Output paths as root, from the outside: record -o, export -o and report -o refuse a
# device node, a fifo, a socket, a directory and a symlink with one line and a non-zero exit and
# leave them exactly as they were; what they write is a new 0600 file; an earlier file is
# replaced only with a note; a failed export leaves the earlier file whole.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
platoon=$(realpath "$platoon"); bin=$(dirname "$platoon")   # the test runs in $tmp
use_tmp out
bg=()
cleanup() { for p in "${bg[@]}"; do kill -KILL "$p"; done 2>/dev/null; stop_pids; rm -rf "$tmp"; }
require_root "(mknod, BPF)"
cd "$tmp"
state() { stat -c '%F %a %s %i' "$1"; }   # what must not change
refused() {  # PATTERN TARGET CMD..: one line matching PATTERN, non-zero exit, TARGET unchanged
  local pattern=$1 target=$2; shift 2
  local before; before=$(state "$target")
  timeout 20 "$@" > out 2> err; local st=$?
  [ "$st" -ne 0 ] && [ "$st" -ne 124 ] || fail "'$*' exited $st on $target"
  [ "$(wc -l < err)" -eq 1 ] || { cat err; fail "'$*' printed more than one line"; }
  grep -q -- "$pattern" err || fail "'$*': '$(cat err)' lacks /$pattern/"
  [ "$(state "$target")" = "$before" ] || fail "$target changed: $before -> $(state "$target")"
  echo "ok refused: $(cat err)"
}

mknod null c 1 3 && chmod 0666 null    # a private /dev/null: the real one is never at stake
mkfifo fifo; mkdir dir
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind("sock")'
echo precious > victim; chmod 0644 victim; ln -s victim link

sleep 30 & target=$!; bg+=($target)
for t in null fifo sock dir link; do
  refused "refusing to write there" "$t" "$platoon" record -q --pid "$target" --duration 0.3 -o "$t"
done
[ "$(cat victim)" = precious ] || fail "record wrote through the symlink"

# A recording to export from, and the refusals of export -o.
"$platoon" record -q --pid "$target" --duration 0.5 -i 0.1 -o t.trace || fail "record"
[ "$(stat -c %a t.trace)" = 600 ] || fail "t.trace is mode $(stat -c %a t.trace)"
for fmt in csv chrome perfetto; do
  for t in null fifo sock dir link; do
    refused "refusing to write there" "$t" "$platoon" export t.trace --format "$fmt" -o "$t"
  done
done
for fmt in json html; do
  for t in null fifo sock dir link; do
    refused "refusing to write there" "$t" "$platoon" report t.trace --format "$fmt" -o "$t"
  done
done
[ "$(cat victim)" = precious ] || fail "export or report wrote through the symlink"
( umask 000; "$platoon" report t.trace --format html -o new.html ) || fail "report --format html"
[ "$(stat -c %a new.html)" = 600 ] || fail "report wrote mode $(stat -c %a new.html)"
[ "$(stat -c %a null)" = 666 ] || fail "the device node lost its mode"

# New files are 0600 whatever the umask; replacing says so; nothing temporary stays behind.
( umask 000; "$platoon" export t.trace --format csv -o new.csv ) || fail "export csv"
[ "$(stat -c %a new.csv)" = 600 ] || fail "export wrote mode $(stat -c %a new.csv)"
echo old > old.csv; chmod 0644 old.csv; ln old.csv old-link.csv
"$platoon" export t.trace --format csv -o old.csv 2> rep.err || fail "export over an old file"
grep -q "replaced" rep.err || { cat rep.err; fail "replacing old.csv was silent"; }
[ "$(stat -c %a old.csv)" = 600 ] && [ "$(cat old-link.csv)" = old ] || fail "replacing changed the old inode"
"$platoon" record -q --pid "$target" --duration 0.3 -o t.trace 2> rep.err || fail "record over t.trace"
grep -q "replaced" rep.err || { cat rep.err; fail "record replacing t.trace was silent"; }

# platoon-load --json: the same refusals, and a new file is 0600.
start_mock --think-time-ms 0 --threads 1
port=$mport
for t in null fifo link; do
  before=$(state "$t")
  "$bin/platoon-load" --url "http://127.0.0.1:$port/fruits" --rate 100 -c 1 -t 1 -d 0.2 --json "$t" > /dev/null 2> load.err \
    && fail "platoon-load --json $t succeeded"
  grep -q "not a regular file" load.err || { cat load.err; fail "platoon-load --json $t: no clear error"; }
  [ "$(state "$t")" = "$before" ] || fail "platoon-load --json changed $t"
done
[ "$(cat victim)" = precious ] || fail "platoon-load wrote through the symlink"
( umask 000; "$bin/platoon-load" --url "http://127.0.0.1:$port/fruits" --rate 100 -c 1 -t 1 -d 0.2 --json load.json > /dev/null ) \
  || fail "platoon-load --json load.json"
[ "$(stat -c %a load.json)" = 600 ] || fail "platoon-load wrote mode $(stat -c %a load.json)"
echo "ok platoon-load --json: refused null, fifo, link; new file 0600"

# A failed export (csv of a file that is not a trace) leaves the earlier output whole.
echo keep > keep.csv
"$platoon" export /etc/passwd --format csv -o keep.csv 2> /dev/null && fail "export of /etc/passwd succeeded"
[ "$(cat keep.csv)" = keep ] || fail "a failed export damaged keep.csv"
left=$(ls -A | grep -c '\.platoon-' || true)
[ "$left" = 0 ] || fail "temporary files left behind: $(ls -A)"
echo PASS
