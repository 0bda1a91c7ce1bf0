# Sourced by the shell tests that put processes in a CPU cgroup (this file is not a test).
# Works on the v1 cpu controller (this project's machines) and on cgroup v2 with the cpu
# controller enabled; mounts come from /proc/self/mountinfo.

# cpu_cgroup_root: the mount point of the hierarchy holding the cpu controller, and its version
# ("DIR 1" or "DIR 2"); nothing when the machine has none.
cpu_cgroup_root() {
  local v1 v2
  v1=$(awk '$0 ~ / - cgroup / { n = split($NF, o, ","); for (i = 1; i <= n; i++) if (o[i] == "cpu") { print $5; exit } }' /proc/self/mountinfo)
  [ -n "$v1" ] && { echo "$v1 1"; return; }
  v2=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
  [ -n "$v2" ] && grep -qw cpu "$v2/cgroup.controllers" 2>/dev/null && echo "$v2 2"
}

# make_cpu_cgroup NAME QUOTA_US PERIOD_US: creates the group (QUOTA_US -1: no limit) and echoes
# its directory; fails (status 1, nothing echoed) when there is no cpu controller.
make_cpu_cgroup() {
  local root version dir
  read -r root version <<< "$(cpu_cgroup_root)"
  [ -n "${root:-}" ] || return 1
  dir=$root/$1
  mkdir -p "$dir" || return 1
  if [ "$version" = 2 ]; then
    grep -qw cpu "$root/cgroup.subtree_control" || echo +cpu > "$root/cgroup.subtree_control" || return 1
  fi
  set_cpu_quota "$dir" "$2" "$3" || return 1
  echo "$dir"
}

# set_cpu_quota DIR QUOTA_US PERIOD_US (QUOTA_US -1: no limit)
set_cpu_quota() {
  if [ -f "$1/cpu.max" ]; then
    if [ "$2" -lt 0 ]; then echo "max $3" > "$1/cpu.max"; else echo "$2 $3" > "$1/cpu.max"; fi
  else
    echo "$3" > "$1/cpu.cfs_period_us" && echo "$2" > "$1/cpu.cfs_quota_us"
  fi
}

# cgroup_add_pid DIR PID: moves the whole process (every thread) into the group.
cgroup_add_pid() { echo "$2" > "$1/cgroup.procs"; }

# cgroup_throttled_ns DIR: cpu.stat's throttled time in ns (v1 throttled_time, v2 throttled_usec).
cgroup_throttled_ns() {
  awk '$1 == "throttled_time" { print $2; exit } $1 == "throttled_usec" { print $2 * 1000; exit }' "$1/cpu.stat"
}

# remove_cgroup DIR: moves what is left in it to the parent and removes it; safe to call twice.
remove_cgroup() {
  [ -n "${1:-}" ] && [ -d "$1" ] || return 0
  local p
  for p in $(cat "$1/cgroup.procs" 2>/dev/null); do echo "$p" > "$(dirname "$1")/cgroup.procs" 2>/dev/null; done
  rmdir "$1" 2>/dev/null || { sleep 0.2; rmdir "$1" 2>/dev/null; }
  return 0
}
