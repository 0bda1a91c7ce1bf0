/* The runtime's USDT probes (drain, steal): what the fiber scheduler did on each carrier. */
#ifndef PLATOON_BPF_RUNTIME_PROBES_BPF_H
#define PLATOON_BPF_RUNTIME_PROBES_BPF_H

#include "bpf/maps.bpf.h"
#include "bpf/stage.bpf.h"
#include "bpf/thread_stats.bpf.h"
#include "bpf/bits.bpf.h"

/* ---- runtime USDT probes (provider "platoon", see runtime/probes.hpp) ----
 * Attached per target pid, so no tgid check; booked on the firing thread (the carrier). */
static __always_inline void emit_runtime(__u16 type, __u32 tid, __u64 now, long carrier, long a,
					 long b)
{
	struct platoon_stage *st;
	struct platoon_ev_runtime *e = reserve_event(sizeof(*e), &st);

	if (!e)
		return;
	fill_header(&e->h, now, type, bpf_get_smp_processor_id(), tid);
	e->carrier = carrier;
	e->a = a;
	e->b = b;
	submit_event(e, st, sizeof(*e));
}

/* How the kernel books what runtime/drain_counters.h says a drain or a steal adds. */
#define BOOK_ADD(name, n) s->name += (n);
#define BOOK_ADD_SLOT(name, i) \
	HIST_INC(s->name, linear_slot(i, BOOK_SLOTS(s->name)), BOOK_SLOTS(s->name));
#define BOOK_SLOTS(hist) (sizeof(hist) / sizeof((hist)[0]))

/* One hit per drain (the runtime's combined `drain` probe): every uprobe hit is a trap into
 * the kernel, so queue depth and fibers run arrive together at the drain's end.
 * usdt_drain books the aggregates and, when recording, emits the event: for targets without the
 * runtime's stats table (an older runtime). usdt_drain_event only emits: for targets whose
 * carriers keep the aggregates themselves (runtime/stats_table.hpp), attached only when raw
 * drain events are asked for, so nothing is booked twice. */
static __always_inline int on_drain(bool book, long carrier, long depth, long fibers_run, long ns)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct platoon_thread_stats *s = current_stats(true, now);

	if (!s || s->exited)
		return 0;
	if (book) {
		PLATOON_ON_DRAIN(BOOK_ADD, BOOK_ADD_SLOT, depth, fibers_run, ns)
	}
	if (targ_events)
		emit_runtime(PLATOON_EV_DRAIN, s->tid, now, carrier, depth, fibers_run);
	return 0;
}

static __always_inline int on_steal(bool book, long thief, long victim, long count)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct platoon_thread_stats *s = current_stats(true, now);

	if (!s || s->exited)
		return 0;
	if (book) {
		PLATOON_ON_STEAL(BOOK_ADD, count)
	}
	if (targ_events)
		emit_runtime(PLATOON_EV_STEAL, s->tid, now, thief, victim, count);
	return 0;
}

SEC("usdt")
int BPF_USDT(usdt_drain, long carrier, long depth, long fibers_run, long ns)
{
	return on_drain(true, carrier, depth, fibers_run, ns);
}

SEC("usdt")
int BPF_USDT(usdt_steal, long thief, long victim, long count)
{
	return on_steal(true, thief, victim, count);
}

SEC("usdt")
int BPF_USDT(usdt_drain_event, long carrier, long depth, long fibers_run, long ns)
{
	return on_drain(false, carrier, depth, fibers_run, ns);
}

SEC("usdt")
int BPF_USDT(usdt_steal_event, long thief, long victim, long count)
{
	return on_steal(false, thief, victim, count);
}

/* The runtime's `stats` probe fires only when a carrier thread starts or ends: attaching it
 * raises its semaphore, which tells the carriers to keep their drain and steal aggregates in
 * their own memory (platoon_runtime_stats), where the collector reads them per snapshot. */
SEC("usdt")
int usdt_stats(struct pt_regs *ctx)
{
	return 0;
}

#endif
