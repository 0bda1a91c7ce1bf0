# Sourced by the shell tests that start servers (tests/*_test.sh; this file is not a test).
# A test keeps the pids it starts in the array `pids` and calls stop_pids from its exit trap.

# port_of LOG: the port platoon-mock / platoon-server printed ("listening on HOST:PORT") in LOG,
# waiting up to 5 s for it; empty if it never came.
port_of() {
  local p
  for _ in $(seq 100); do
    p=$(grep -o 'listening on [0-9.]*:[0-9]*' "$1" | head -1 | sed 's/.*://')
    [ -n "$p" ] && { echo "$p"; return; }
    sleep 0.05
  done
}

# stop_pids [GRACE_S]: SIGINT to every pid in $pids (after a SIGCONT, for one a test stopped),
# GRACE_S (default 0.3) to end cleanly, then SIGKILL to the rest, and reap them.
stop_pids() {
  local p
  for p in "${pids[@]}"; do kill -CONT "$p"; kill -INT "$p"; done 2>/dev/null
  sleep "${1:-0.3}"
  for p in "${pids[@]}"; do kill -KILL "$p"; done 2>/dev/null
  wait 2>/dev/null
}
