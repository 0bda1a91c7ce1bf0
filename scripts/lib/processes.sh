# Starting and stopping the programs a script or a test runs, said once for both: sourced by
# scripts/lib/common.sh and tests/lib/common.sh (this file is not a program). The caller keeps
# the pids it starts in the array `pids`.

# port_of LOG [SECONDS]: the port of LOG's first "listening on HOST:PORT" line (platoon-mock,
# platoon-server, the exporter), waiting up to SECONDS (default 10) for it; status 1 and no
# output if it never came.
port_of() {
  local p _
  for _ in $(seq $((${2:-10} * 20))); do
    p=$(grep -o 'listening on [0-9.]*:[0-9]*' "$1" 2> /dev/null | head -1 | sed 's/.*://')
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.05
  done
  return 1
}

# A TCP port free on 127.0.0.1 now (for programs that cannot be given port 0).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# stop_pids [GRACE_S [PID..]]: SIGINT to every pid in `pids`, or to the PIDs given (after a
# SIGCONT, for one that was stopped), up to GRACE_S (default 1) for them to end cleanly, SIGKILL
# to the rest, and reap them (only them: others may run on).
stop_pids() {
  # (not a local `pids`: an exit trap run meanwhile would see it in place of the caller's)
  local p alive _ grace=${1:-1} targets
  if [ $# -gt 1 ]; then shift; targets=("$@"); else targets=("${pids[@]}"); fi
  # (each kill may find its process gone; `|| true` keeps a caller under set -e going)
  for p in "${targets[@]}"; do kill -CONT "$p" 2> /dev/null || true; kill -INT "$p" 2> /dev/null || true; done
  for _ in $(seq "$(awk -v s="$grace" 'BEGIN { print int(s * 20 + 0.999) }')"); do
    alive=
    for p in "${targets[@]}"; do kill -0 "$p" 2> /dev/null && { alive=1; break; }; done
    [ -z "$alive" ] && break
    sleep 0.05
  done
  for p in "${targets[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
  [ ${#targets[@]} -eq 0 ] || wait "${targets[@]}" 2> /dev/null || true
}
