#!/usr/bin/env bash
# A per-thread scheduling view from /proc, until `platoon top` exists:
# every INTERVAL seconds, per thread of PID: %CPU, %WAIT (schedstat run_delay), voluntary and
# involuntary switches per second, migrations per second (se.nr_migrations), last CPU.
# usage: scripts/proc-threads.sh PID [INTERVAL] [COUNT]
set -uo pipefail
pid=${1:?usage: proc-threads.sh PID [INTERVAL] [COUNT]}
interval=${2:-1}
count=${3:-0}
[ -d "/proc/$pid" ] || { echo "proc-threads: no such process: $pid" >&2; exit 1; }

declare -A run wait vcs ncs mig
sample() {  # prints: tid comm run_ns wait_ns vcsw nvcsw migrations cpu
  for t in /proc/"$pid"/task/*; do
    tid=${t##*/}
    read -r r w _ < "$t/schedstat" 2>/dev/null || continue
    comm=$(cat "$t/comm" 2>/dev/null)
    v=$(awk '/^voluntary_ctxt_switches/{print $2}' "$t/status" 2>/dev/null)
    n=$(awk '/^nonvoluntary_ctxt_switches/{print $2}' "$t/status" 2>/dev/null)
    m=$(awk '/^se.nr_migrations/{print $3}' "$t/sched" 2>/dev/null)
    cpu=$(awk '{print $39}' "$t/stat" 2>/dev/null)
    echo "$tid $comm $r $w ${v:-0} ${n:-0} ${m:-0} ${cpu:-?}"
  done
}

i=0
while [ -d "/proc/$pid" ]; do
  declare -A prev_run=() prev_wait=() prev_v=() prev_n=() prev_m=()
  while read -r tid comm r w v n m cpu; do
    prev_run[$tid]=$r; prev_wait[$tid]=$w; prev_v[$tid]=$v; prev_n[$tid]=$n; prev_m[$tid]=$m
  done < <(sample)
  sleep "$interval"
  [ -d "/proc/$pid" ] || break
  printf '\n%s  pid %s  interval %ss  source: procfs\n' "$(date +%T)" "$pid" "$interval"
  printf '%8s %-16s %6s %6s %8s %8s %7s %4s\n' TID NAME %CPU %WAIT cswch/s nvcsw/s migr/s CPU
  while read -r tid comm r w v n m cpu; do
    [ -n "${prev_run[$tid]:-}" ] || continue
    awk -v tid="$tid" -v comm="$comm" -v dr=$((r - prev_run[$tid])) -v dw=$((w - prev_wait[$tid])) \
        -v dv=$((v - prev_v[$tid])) -v dn=$((n - prev_n[$tid])) -v dm=$((m - prev_m[$tid])) \
        -v cpu="$cpu" -v iv="$interval" 'BEGIN {
      printf "%8s %-16s %6.1f %6.1f %8.0f %8.0f %7.0f %4s\n", tid, comm, dr/iv/1e7, dw/iv/1e7, dv/iv, dn/iv, dm/iv, cpu }'
  done < <(sample)
  i=$((i + 1))
  [ "$count" -gt 0 ] && [ "$i" -ge "$count" ] && break
done
