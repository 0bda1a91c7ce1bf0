/* A platoon-runtime carrier's drain and steal counters, listed once. Three places keep them,
 * all expanding this list:
 *   - the carrier itself, in its slot of the runtime's stats table (runtime/stats_table.hpp),
 *     which platoon's collector reads from the process's memory
 *     (bpf/collectors/runtime_stats_reader.cpp);
 *   - the kernel, per probe hit, for a runtime without that table (struct
 *     platoon_thread_stats in bpf/platoon.h, booked by bpf/runtime_probes.bpf.h);
 *   - a snapshot's ThreadSample and the trace format (bpf/snapshot/thread_fields.hpp).
 * The names are those every reader sees (the trace format's fields, the report's JSON keys).
 * Plain C: the BPF programs include it too.
 *
 * PLATOON_DRAIN_COUNTERS is in the order of the kernel's struct and the trace format, so
 * append only (thread_fields.hpp says why). Each entry names its kind:
 *   COUNTER(name)        a 64-bit counter that only grows
 *   HIST(name, slots)    64-bit counters, one per slot
 * The stats table's slot holds the counters in this order, then the histograms: that layout is
 * read by another process, and runtime/stats_table.cpp pins it. */
#ifndef PLATOON_RUNTIME_DRAIN_COUNTERS_H
#define PLATOON_RUNTIME_DRAIN_COUNTERS_H

/* The depth histogram: slot i = depth i for 0..63, slot 64 = 64 or more. Readers take it for one
 * of the kernel's linear histograms (PLATOON_BATCH_SLOTS, bpf/snapshot/snapshot.hpp checks). */
#define PLATOON_DRAIN_DEPTH_SLOTS 65

#define PLATOON_DRAIN_COUNTERS(COUNTER, HIST)                                                  \
	COUNTER(drains)                  /* drains that found fibers queued (depth > 0) */     \
	COUNTER(drain_depth_sum)         /* queue depth at their start, summed */              \
	HIST(drain_depth_hist, PLATOON_DRAIN_DEPTH_SLOTS) /* the same depths, counted */        \
	COUNTER(drain_fibers_run)        /* fibers they ran */                                 \
	COUNTER(drain_ns)                /* their time, end minus start, summed */             \
	COUNTER(steals)                  /* successful steals by this thread as thief */       \
	COUNTER(stolen_fibers)           /* fibers they took */

/* What one event adds to the counters, for both bookers (the carrier and the kernel), in terms
 * of the probe's arguments (runtime/probes.hpp): a drain(carrier, depth, fibers_run, ns) and a
 * steal(thief, victim, count). Each booker says how it adds:
 *   ADD(name, n)         counter `name` grows by n
 *   ADD_SLOT(name, i)    slot i of histogram `name` grows by one (the last slot for i past it)
 * Every counter of the list is booked by one of them (bpf/collectors/runtime_stats_reader.cpp
 * checks at compile time). */
#define PLATOON_ON_DRAIN(ADD, ADD_SLOT, depth, fibers_run, ns)                                \
	ADD(drains, 1)                                                                        \
	ADD(drain_depth_sum, depth)                                                           \
	ADD_SLOT(drain_depth_hist, depth)                                                     \
	ADD(drain_fibers_run, fibers_run)                                                     \
	ADD(drain_ns, ns)

#define PLATOON_ON_STEAL(ADD, count)                                                          \
	ADD(steals, 1)                                                                        \
	ADD(stolen_fibers, count)

#endif /* PLATOON_RUNTIME_DRAIN_COUNTERS_H */
