# What the scripts under scripts/ share: one-line errors, an option parser driven by a table,
# and (processes.sh, shared with the tests) finding a server's port and stopping every process
# a script started. Source it after setting `script` (the name in
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

. "$(dirname "${BASH_SOURCE[0]}")/processes.sh"

# Every pid in `pids` gets SIGINT, up to a second to finish, then SIGKILL; used as the EXIT
# trap so that a failed or interrupted run leaves nothing behind.
pids=()
stop_all() {
  trap - INT TERM EXIT
  stop_pids 1
}
