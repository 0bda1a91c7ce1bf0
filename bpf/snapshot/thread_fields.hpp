// The cumulative per-thread quantities of a ThreadSample, listed once. The struct's members,
// the BPF collector's copy from the kernel map value, a window's subtraction and the trace
// codec (writer and reader) all expand this list, so adding a quantity here is adding it to
// all of them; tests/model/trace_file_test.cpp ("EveryListedFieldRoundTrips") guards the codec.
//
// THE ORDER IS THE TRACE FORMAT: a recording stores the quantities in this order, after the
// identity fields (docs/trace-format.md, "SNAP"). Append only: moving an entry changes the bytes
// of every recording. Where each version of the format put which entries, and what an entry
// appended now may be, is the codec's (tui/trace/snapshot_codec.cpp).
//
// Each entry names its kind, and every user of the list says what each kind means to it:
//   COUNTER(name)        uint64_t that only grows; a window holds later - earlier
//   MAX(name)            uint64_t, the largest value seen; a window keeps the later one
//   HIST(name, slots)    std::array<uint64_t, slots> of counters, one per slot
//   PER_CPU(name)        std::vector<uint64_t>, one counter per CPU; its length varies with the
//                        producer, so each user handles it by name
// Every name is also the kernel's, in struct platoon_thread_stats (bpf/platoon.h). The runtime's
// drain and steal counters are its own list (runtime/drain_counters.h, in these kinds), which
// the runtime's stats table and the kernel's struct expand too.
//
// Not in the list, handled by name everywhere: the identity and state fields (tid, pid, comm,
// exited, first_seen_ns, last_cpu, cgroup).
#pragma once

#include "runtime/drain_counters.h"

#define PLATOON_THREAD_FIELDS(COUNTER, MAX, HIST, PER_CPU)                                 \
  /* scheduler (kFieldRunWait, kFieldSwitches, kFieldMigrations, kFieldWakeups) */          \
  COUNTER(run_ns)                /* on-CPU time */                                          \
  COUNTER(wait_ns)               /* runnable but not running */                             \
  COUNTER(switches_voluntary)    /* switched out blocking */                                \
  COUNTER(switches_involuntary)  /* switched out still runnable */                          \
  COUNTER(switch_ins)                                                                       \
  COUNTER(migrations)                                                                       \
  COUNTER(wakeups)                                                                          \
  /* run-queue latency (kFieldRunqHist) */                                                  \
  MAX(runq_max_ns)                                                                          \
  HIST(runq_hist, kRunqSlots)    /* log2 ns */                                              \
  /* switch-ins by CPU (kFieldCpuDist); index = CPU, may be shorter than the CPU count */   \
  PER_CPU(cpu_switch_ins)                                                                   \
  /* epoll (kFieldIo) */                                                                    \
  COUNTER(io_cycles)             /* calls that returned >= 0 */                             \
  COUNTER(io_events)             /* ready events they returned */                           \
  COUNTER(io_blocked_ns)         /* time inside the calls */                                \
  HIST(io_events_hist, kBatchSlots)                                                         \
  /* runtime drains and steals (kFieldDrain), as the runtime lists them */                 \
  PLATOON_DRAIN_COUNTERS(COUNTER, HIST)                                         \
  COUNTER(polls)                                                                            \
  COUNTER(poll_events)                                                                      \
  /* switch-ins on CPUs beyond cpu_switch_ins's slots, >= kMaxCpus (kFieldCpuDist) */       \
  COUNTER(cpu_overflow)                                                                     \
  /* the parts of wait_ns with a cause other than another task: the rest of it is the */    \
  /* contended wait (kFieldWaitSplit; how each is measured: bpf/wait_split.bpf.h) */        \
  COUNTER(wait_throttled_ns)     /* its group was throttled by its CPU quota */             \
  COUNTER(wait_steal_ns)         /* its CPU was stolen by the hypervisor */                 \
  COUNTER(wait_irq_ns)           /* its CPU served hard and soft interrupts */              \
  COUNTER(wait_idle_exit_ns)     /* woken onto an idle CPU: the idle exit */
