# Sourced by the shell tests (tests/*_test.sh; this file is not a test): what every one of them
# needs said once — where the binaries are, failing, skipping (exit 77), a private $tmp with an
# exit trap, the one-line error check, and the mock, server, load and exporter most of them run.
# Sets BUILD (default build), bin and platoon; a test may set its own after sourcing this.
BUILD=${BUILD:-build}
bin=$BUILD/bin
platoon=$bin/platoon
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/processes.sh"

fail() { echo "FAIL: $*"; exit 1; }
# skip MESSAGE: the test cannot run here; 77 is what the harness counts as a skip.
skip() { echo "$*"; exit 77; }
# sanitized [BINARY]: status 0 when BINARY (default $platoon) carries a sanitizer's runtime
# (make SAN=...). It runs several times slower then, so a test holds it to a rate, a time or a
# memory cap only without.
sanitized() { grep -qaE '__(tsan|asan)_init' "${1:-$platoon}"; }
require_root() { [ "$(id -u)" = 0 ] || skip "needs root ${1:-for BPF}"; }
# require_cmd CMD [MESSAGE]: skip unless CMD is on PATH.
require_cmd() { command -v "$1" > /dev/null || skip "${2:-needs $1}"; }

# use_tmp NAME: a fresh $tmp (/tmp/platoon-NAME.XXXXXX), an empty $pids and an exit trap that
# calls cleanup: stop_pids (up to $stop_grace seconds, default 0.3), then remove $tmp. A test
# with more to undo defines its own cleanup after this.
use_tmp() {
  tmp=$(mktemp -d "/tmp/platoon-$1.XXXXXX"); pids=()
  trap cleanup EXIT
}
cleanup() { stop_pids "${stop_grace:-0.3}"; rm -rf "$tmp"; }

# expect_error [--status N] PATTERN CMD..: CMD exits non-zero (N when given) and prints exactly
# one line on stderr, matching grep PATTERN ('' for any). Its output stays in $tmp/out, $tmp/err.
# Safe under set -e.
expect_error() {
  local want=""
  [ "$1" = --status ] && { want=$2; shift 2; }
  local pattern=$1; shift
  local st=0
  "$@" > "$tmp/out" 2> "$tmp/err" || st=$?
  if [ -n "$want" ]; then
    [ "$st" = "$want" ] || { cat "$tmp/err"; fail "'$*' exited $st, expected $want"; }
  else
    [ "$st" -ne 0 ] || fail "'$*' should fail"
  fi
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "'$*' should print one line"; }
  grep -q -- "$pattern" "$tmp/err" || fail "'$*' printed '$(cat "$tmp/err")', expected /$pattern/"
  echo "ok error ($st): $(cat "$tmp/err")"
}

# wait_started LOG PATTERN WHAT: up to 5 s for PATTERN in LOG; fail "WHAT did not start" if not.
wait_started() {
  for _ in $(seq 100); do grep -q -- "$2" "$1" && return 0; sleep 0.05; done
  cat "$1"; fail "$3 did not start"
}

# start_mock [ARGS..]: platoon-mock on a free port (default 1 ms think time, 1 thread), logging
# to $tmp/mock.log; sets mport.
start_mock() {
  [ $# -gt 0 ] || set -- --think-time-ms 1 --threads 1
  "$bin/platoon-mock" --port 0 "$@" > "$tmp/mock.log" 2>&1 & pids+=($!)
  mport=$(port_of "$tmp/mock.log"); [ -n "$mport" ] || fail "mock did not start"
}

# start_server [--log NAME] ARGS..: platoon-server on a free port in front of the mock, logging
# to $tmp/NAME.log (default server); sets spid and sport.
start_server() {
  local name=server
  [ "${1:-}" = --log ] && { name=$2; shift 2; }
  "$bin/platoon-server" --port 0 --backend "127.0.0.1:$mport" "$@" > "$tmp/$name.log" 2>&1 & spid=$!; pids+=($spid)
  sport=$(port_of "$tmp/$name.log"); [ -n "$sport" ] || fail "server ($name) did not start"
}

# start_nginx [run-nginx.sh ARGS..]: Debian's nginx (skips without it) proxying the mock with two
# workers, in $tmp/nginx, answering; sets nport, master and workers (a comma list).
start_nginx() {
  [ -x /usr/sbin/nginx ] || skip "nginx not installed"
  nport=$(free_port)
  scripts/peers/nginx/run-nginx.sh --port "$nport" --backend "127.0.0.1:$mport" --workers 2 --dir "$tmp/nginx" "$@" \
    > "$tmp/nginx.log" 2>&1 & master=$!; pids+=($master)
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$nport/fruits" > /dev/null && break; sleep 0.05; done
  workers=$(pgrep -P "$master" | tr '\n' ',' | sed 's/,$//')
  [ -n "$workers" ] || fail "no nginx workers under $master"
}

# run_load ARGS..: platoon-load against the server's /fruits (port $sport), in the foreground.
run_load() { "$bin/platoon-load" --url "http://127.0.0.1:$sport/fruits" "$@"; }
# start_load ARGS..: the same in the background, quiet, its pid in $pids (the program's own pid:
# a backgrounded function would be a subshell that stop_pids' signals do not pass on).
start_load() { "$bin/platoon-load" --url "http://127.0.0.1:$sport/fruits" "$@" > /dev/null 2>&1 & pids+=($!); }

# start_exporter LOG ARGS..: platoon exporter ARGS on a free port, stderr to LOG, run under the
# command words in the array $exporter_prefix if set (prlimit ...); sets exporter and eport.
exporter_prefix=()
start_exporter() {
  local log=$1; shift
  "${exporter_prefix[@]}" "$platoon" exporter "$@" --listen 127.0.0.1:0 2> "$log" & exporter=$!; pids+=($exporter)
  eport=$(port_of "$log"); [ -n "$eport" ] || { cat "$log"; fail "exporter did not start"; }
}

# json FILE EXPR: EXPR evaluated in python with d the JSON in FILE.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$1" "$2"; }
