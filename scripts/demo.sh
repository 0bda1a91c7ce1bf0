#!/usr/bin/env bash
# The demo: platoon-mock and platoon-load on CPU 0, platoon-server on CPU 1 (2 carriers),
# load at a fixed rate, and the server's live per-thread scheduling numbers in `platoon top`.
# On a terminal the dashboard runs until you quit it (q or Ctrl-C) and load runs as long;
# otherwise (pipes, CI) `platoon top --batch` prints --duration tables; then `platoon doctor`
# watches 5 s and says what it found. Everything is stopped
# on the way out.
# usage: scripts/demo.sh [BUILD_DIR] [--duration S] [--rate R] [--scheduler carrier|pool] [--pin]
set -uo pipefail
script=demo
. "$(cd "$(dirname "$0")" && pwd)/lib/common.sh"
build=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build=$1; shift; fi
duration=30
rate=5000
scheduler=carrier
pin=
options=(--duration=duration --rate=rate --scheduler=scheduler --pin+pin)
parse_options "$@"
bin=$build/bin
for b in platoon-server platoon-mock platoon-load; do
  [ -x "$bin/$b" ] || { echo "demo: $bin/$b is missing; run make" >&2; exit 1; }
done
ncpu=$(nproc)
server_cpus=1; side_cpus=0
[ "$ncpu" -lt 2 ] && server_cpus=0

trap stop_all INT TERM EXIT

log=$(mktemp -d /tmp/platoon-demo.XXXXXX)
taskset -c $side_cpus "$bin/platoon-mock" --port 0 --think-time-ms 1 --threads 1 > "$log/mock.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q "listening on" "$log/mock.log" && break; sleep 0.1; done
mock_port=$(grep -o 'listening on [0-9.]*:[0-9]*' "$log/mock.log" | head -1 | sed 's/.*://')
[ -n "$mock_port" ] || { echo "demo: platoon-mock did not start:"; cat "$log/mock.log"; exit 1; }

taskset -c $server_cpus "$bin/platoon-server" --port 0 --backend "127.0.0.1:$mock_port" --carriers 2 \
  --scheduler "$scheduler" ${pin:+--pin} > "$log/server.log" 2>&1 &
server_pid=$!
pids+=($server_pid)
for _ in $(seq 50); do grep -q "listening on" "$log/server.log" && break; sleep 0.1; done
port=$(grep -o 'listening on [0-9.]*:[0-9]*' "$log/server.log" | head -1 | sed 's/.*://')
[ -n "$port" ] || { echo "demo: platoon-server did not start:"; cat "$log/server.log"; exit 1; }

# On a terminal the load runs until the dashboard is quit; the stop_all trap stops it.
interactive=
[ -t 1 ] && [ -t 0 ] && interactive=1
doctor_s=5
load_duration=$((duration + doctor_s + 1))   # top's tables, then doctor's watch
[ -n "$interactive" ] && load_duration=86400
echo "mock :$mock_port (CPU $side_cpus)  server :$port pid $server_pid (CPU $server_cpus, $scheduler)  load $rate req/s (CPU $side_cpus)  logs $log"
taskset -c $side_cpus "$bin/platoon-load" --url "http://127.0.0.1:$port/fruits" --rate "$rate" \
  --connections 100 --threads 1 --duration "$load_duration" --latency > "$log/load.txt" 2>&1 &
load_pid=$!
pids+=($load_pid)

if [ -n "$interactive" ]; then
  # The dashboard in the foreground: Ctrl-C or q ends it, then the trap stops the rest.
  "$bin/platoon" top --pid "$server_pid" --interval 1
  echo "demo: what platoon doctor makes of the next $doctor_s s (the load is still on)"
  "$bin/platoon" doctor --pid "$server_pid" --duration "$doctor_s"
  echo "demo: stopping the load, the server and the mock (logs in $log)"
else
  "$bin/platoon" top --pid "$server_pid" --interval 1 --batch --iterations "$duration"
  echo
  echo "demo: what platoon doctor makes of the next $doctor_s s"
  "$bin/platoon" doctor --pid "$server_pid" --duration "$doctor_s"
  wait $load_pid
  echo
  cat "$log/load.txt"
fi
