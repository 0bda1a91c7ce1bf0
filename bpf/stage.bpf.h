/* Event records: staged per CPU and handed to the ring buffer a batch at a time.
 *
 * A ring-buffer record costs a reserve and a commit under the ring's lock (with its irqsave),
 * ~100 ns per record on this project's VMs, more than the rest of a recorded event together
 * (docs/benchmarks.md). So each CPU writes its records into a stage of its own (a per-CPU
 * array value: no lock, a hot cache line) and moves the stage into the ring as one record
 * (bpf_ringbuf_output) when it is full, when its oldest record is PLATOON_STAGE_MAX_AGE_NS old,
 * or when user space runs flush_stages on that CPU (each poll: a quiet CPU's last records do not
 * wait for its next event). User space splits a ring record back into events by their types.
 *
 * Programs on one CPU nest only by interrupting each other (an irq-time wakeup inside a switch
 * hook; a preempted syscall-tracepoint program), never run side by side, so a plain `busy` flag
 * is enough: a program that finds the stage busy writes its record straight into the ring, as
 * before. Records of one CPU therefore reach the ring out of stamp order by up to the flush
 * delay; readers re-sort (tui/trace/events.hpp, kReorderHorizonNs). */
#ifndef PLATOON_BPF_STAGE_BPF_H
#define PLATOON_BPF_STAGE_BPF_H

#include "bpf/maps.bpf.h"

struct platoon_stage {
	__u32 len;          /* bytes staged */
	__u32 busy;         /* a program on this CPU is between reserve_event and submit_event */
	__u32 count;        /* records staged */
	__u32 pad;
	__u64 first_ns;     /* stamp of the oldest staged record */
	/* room past the end for the largest record, so a write at any offset below
	 * PLATOON_STAGE_BYTES stays inside the value whatever the verifier knows of its size */
	__u8 data[PLATOON_STAGE_BYTES + 128];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct platoon_stage);
} stage SEC(".maps");

/* Set by user space once it has checked that it can run flush_stages on each CPU
 * (BPF_F_TEST_RUN_ON_CPU, 5.10): without that, records go straight to the ring. */
volatile bool stage_on = false;

static __always_inline void ring_submit_flags_for_wakeup(__u64 *flags)
{
	/* The reader is woken only once a quarter of the ring is unread (targ_wakeup_bytes): it
	 * drains on its own timer otherwise. */
	*flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= targ_wakeup_bytes ? BPF_RB_FORCE_WAKEUP
										    : BPF_RB_NO_WAKEUP;
}

/* Moves what this CPU staged into the ring buffer, one record; a full ring loses the batch,
 * counted per record. */
static __always_inline void flush_stage(struct platoon_stage *st)
{
	__u64 len = st->len;
	__u64 flags;

	/* The verifier needs the size bounded in the very register passed to the helper. */
	barrier_var(len);
	if (len == 0 || len > PLATOON_STAGE_BYTES)
		return;
	ring_submit_flags_for_wakeup(&flags);
	if (bpf_ringbuf_output(&events, st->data, len, flags))
		count_drops(PLATOON_DROP_RINGBUF, st->count);
	st->len = 0;
	st->count = 0;
}

/* Room for one record of `size` bytes (at most 128): in this CPU's stage (*stp set), or, when
 * the stage is off or busy, in the ring buffer itself. NULL: the ring is full (counted).
 * Every non-NULL result must reach submit_event(e, *stp, size). */
static __always_inline void *reserve_event(__u64 size, struct platoon_stage **stp)
{
	__u32 zero = 0;
	struct platoon_stage *st = stage_on ? bpf_map_lookup_elem(&stage, &zero) : NULL;
	void *e;

	*stp = NULL;
	if (st && !st->busy) {
		st->busy = 1;
		barrier();  /* an interrupting program sees busy before we touch len */
		if (st->len + size > PLATOON_STAGE_BYTES)
			flush_stage(st);
		*stp = st;
		return &st->data[st->len & (PLATOON_STAGE_BYTES - 1)];
	}
	e = bpf_ringbuf_reserve(&events, size, 0);
	if (!e)
		count_drop(PLATOON_DROP_RINGBUF);
	return e;
}

static __always_inline void submit_event(void *e, struct platoon_stage *st, __u64 size)
{
	__u64 flags;

	if (st) {
		__u64 now = ((struct platoon_event_header *)e)->ts_ns;

		if (st->count == 0)
			st->first_ns = now;
		st->len += size;
		st->count++;
		if (now - st->first_ns >= PLATOON_STAGE_MAX_AGE_NS)
			flush_stage(st);
		barrier();
		st->busy = 0;
		return;
	}
	ring_submit_flags_for_wakeup(&flags);
	bpf_ringbuf_submit(e, flags);
}

/* Run by user space on each CPU (BPF_PROG_TEST_RUN with BPF_F_TEST_RUN_ON_CPU), never attached:
 * hands that CPU's staged records to the ring. It runs in an IPI, so it may interrupt a program
 * that is writing into the stage: then that program's submit flushes soon enough. */
SEC("raw_tp")
int flush_stages(void *ctx)
{
	__u32 zero = 0;
	struct platoon_stage *st = bpf_map_lookup_elem(&stage, &zero);

	if (!st || st->busy)
		return 0;
	st->busy = 1;
	barrier();
	flush_stage(st);
	barrier();
	st->busy = 0;
	return 0;
}

#endif
