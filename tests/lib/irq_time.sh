# Sourced by the shell tests that need to know whether the kernel accounts IRQ time (this file is
# not a test). Decided from the kernel, never from platoon: the irq part of a thread's wait can
# only be measured when it does.

# irq_time_accounted: status 0 when the running kernel accounts hard and soft interrupt time
# (CONFIG_IRQ_TIME_ACCOUNTING), 1 when not. Its config (/boot, /proc/config.gz) decides; without
# one, /proc/stat's irq column since boot does: with the accounting every timer interrupt adds
# to it, while the tick's sampling books a tick to irq only when it interrupts an interrupt.
irq_time_accounted() {
  local config
  config=$(cat "/boot/config-$(uname -r)" 2>/dev/null || zcat /proc/config.gz 2>/dev/null)
  if [ -n "$config" ]; then
    grep -q '^CONFIG_IRQ_TIME_ACCOUNTING=y' <<< "$config"
    return
  fi
  awk '$1 ~ /^cpu[0-9]/ && $7 > 0 { found = 1 } END { exit !found }' /proc/stat
}
