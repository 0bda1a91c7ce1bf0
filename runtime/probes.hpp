// USDT probe points of the runtime (provider "platoon"), with semaphores: each probe site is
// guarded by its semaphore, which a tracer (bpftrace, libbpf's USDT attach) raises while it is
// attached, so an untraced process pays one predictable load and branch per site.
//
//   poll          (carrier, events)            a non-blocking or blocking poll returned
//   drain_start   (carrier, queue_depth)       runnable fibers queued when draining starts
//   drain_end     (carrier, fibers_run, ns)
//   drain         (carrier, queue_depth, fibers_run, ns)   at drain end: both in one probe hit,
//                 which is what platoon's collector attaches (each uprobe hit is a trap)
//   steal         (thief, victim, count)
//   park          (carrier, fiber_id)
//   unpark        (target_carrier, fiber_id)   target -1: the worker pool
//   carrier_sleep (carrier)
//   carrier_wake  (carrier)
//   stats         (&platoon_runtime_stats)     at each carrier thread's start and end only:
//                 not for its hits but for its semaphore, which a tracer raises by attaching
//                 to it; while raised, carriers keep their drain/steal aggregates in the table
//                 (runtime/stats_table.hpp) for the tracer to read from memory
#pragma once

#define _SDT_HAS_SEMAPHORES 1
// Arguments in registers (or immediates), never memory operands: a BPF program reads a
// register argument from pt_regs, but a stack one with bpf_probe_read_user, a helper call per
// argument on every hit.
#define STAP_SDT_ARG_CONSTRAINT nr
#include <sys/sdt.h>

#define PLATOON_SEMAPHORE(name) platoon_##name##_semaphore
#define PLATOON_DECLARE_SEMAPHORE(name) \
  extern "C" volatile unsigned short PLATOON_SEMAPHORE(name)

PLATOON_DECLARE_SEMAPHORE(poll);
PLATOON_DECLARE_SEMAPHORE(drain_start);
PLATOON_DECLARE_SEMAPHORE(drain_end);
PLATOON_DECLARE_SEMAPHORE(drain);
PLATOON_DECLARE_SEMAPHORE(steal);
PLATOON_DECLARE_SEMAPHORE(park);
PLATOON_DECLARE_SEMAPHORE(unpark);
PLATOON_DECLARE_SEMAPHORE(carrier_sleep);
PLATOON_DECLARE_SEMAPHORE(carrier_wake);
PLATOON_DECLARE_SEMAPHORE(stats);

#define PLATOON_PROBE_ENABLED(name) __builtin_expect(PLATOON_SEMAPHORE(name) != 0, 0)

#define PLATOON_PROBE1(name, a) \
  do { if (PLATOON_PROBE_ENABLED(name)) STAP_PROBE1(platoon, name, a); } while (0)
#define PLATOON_PROBE2(name, a, b) \
  do { if (PLATOON_PROBE_ENABLED(name)) STAP_PROBE2(platoon, name, a, b); } while (0)
#define PLATOON_PROBE3(name, a, b, c) \
  do { if (PLATOON_PROBE_ENABLED(name)) STAP_PROBE3(platoon, name, a, b, c); } while (0)
