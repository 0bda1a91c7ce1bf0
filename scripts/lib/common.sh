# What the scripts under scripts/ share: one-line errors, an option parser driven by a table,
# and stopping every process a script started. Source it after setting `script` (the name in
# error messages) and, for parse_options, `options`:
#   options=(--rate=rate --pin+pin --no-pidstat~pidstat)
#     --flag=var  takes a value (an empty or missing one is an error)
#     --flag+var  a switch: var=1
#     --flag~var  a switch: var= (turns a default off)
# -h/--help prints the script's header comment (the lines after #! up to the first non-comment).

die() { echo "$script: $*" >&2; exit 2; }

show_help() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

parse_options() {
  local spec found
  while [ $# -gt 0 ]; do
    case $1 in -h|--help) show_help; exit 0 ;; esac
    found=
    for spec in "${options[@]}"; do
      case $spec in
        "$1="*) [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"
                printf -v "${spec#*=}" %s "$2"; shift; found=1; break ;;
        "$1+"*) printf -v "${spec#*+}" %s 1; found=1; break ;;
        "$1~"*) printf -v "${spec#*~}" %s ""; found=1; break ;;
      esac
    done
    [ -n "$found" ] || die "unknown option: $1 (see --help)"
    shift
  done
}

# LOG -> the port of its first "listening on HOST:PORT" line, waiting up to 10 s for it.
wait_port() {
  local p _
  for _ in $(seq 100); do
    p=$(grep -o 'listening on [0-9.]*:[0-9]*' "$1" 2>/dev/null | head -1 | sed 's/.*://')
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.1
  done
  return 1
}

# A TCP port free on 127.0.0.1 now (for programs that cannot be given port 0).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Every pid in `pids` gets SIGINT, up to a second to finish, then SIGKILL; used as the EXIT
# trap so that a failed or interrupted run leaves nothing behind.
pids=()
stop_all() {
  trap - INT TERM EXIT
  local p alive _
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null; done
  for _ in 1 2 3 4 5; do
    alive=
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.2
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
}
