// SPDX-License-Identifier: GPL-2.0
/* platoon's kernel side: per-thread scheduler, epoll and runtime aggregates for the target
 * processes, plus (when recording) compact event records in a ring buffer.
 *
 * Every hook exists twice, as tp_btf (direct BTF loads, cheapest) and raw_tp (CO-RE probe
 * reads, for kernels where tracing programs cannot attach); user space loads one set. The
 * handlers are __always_inline with a constant `btf` argument so each entry point compiles to
 * the accesses its program type allows.
 *
 * Cost discipline: the first thing every scheduler hook does is test the task's tgid against
 * the target bitmap and leave if it is not there; everything else (clock, CPU id, stats entry) happens
 * only for target threads. One stats lookup per task per event. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>

#include "bpf/platoon.h"
#include "bpf/bits.bpf.h"
#include "bpf/core_fixes.bpf.h"

#define TASK_RUNNING 0
#define PF_EXITING 0x00000004

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load. */
const volatile bool targ_events = false;        /* write ring-buffer records */
const volatile bool targ_comm_set = false;      /* match new processes by comm */
const volatile char targ_comm[PLATOON_COMM_LEN] = {};
/* The reader is woken only once this much is unread: it drains on its own timer otherwise, so
 * that a busy target does not pay for a reader wakeup (irq_work + epoll) on every record. */
const volatile __u64 targ_wakeup_bytes = 1;
/* New processes forked by a target become targets (perf's inherit), at sched_process_fork. */
const volatile bool targ_follow_forks = false;
/* sched_switch passes prev_state as its 4th argument since 5.18; before that the programs may
 * not read ctx[3] at all (tp_btf rejects the access, raw_tp the attach), so the state is read
 * from the task instead. User space sets this from the tracepoint's BTF prototype. */
const volatile bool targ_switch_state_arg = true;
/* Per-CPU switch-in slots kept per thread (at most PLATOON_MAX_CPUS); switch-ins on CPUs at or
 * above it are counted in cpu_overflow. Lowered only by tests, to exercise that count on a
 * machine with few CPUs. */
const volatile __u32 targ_cpu_slots = PLATOON_MAX_CPUS;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PLATOON_MAX_TARGETS);
	__type(key, __u32);                         /* tgid */
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PLATOON_MAX_THREADS);
	__type(key, __u32);                         /* tid */
	__type(value, struct platoon_thread_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PLATOON_MAX_PAIRS);
	__type(key, struct platoon_pair_key);
	__type(value, struct platoon_pair_value);
} pairs SEC(".maps");

/* Target threads that found `stats` full, so that PLATOON_DROP_THREADS counts each such thread
 * once rather than each of its events. LRU: beyond 4,096 untracked threads at once, an old one
 * may be counted again (the count then over- rather than under-states). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);                         /* tid */
	__type(value, __u8);
} untracked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PLATOON_DROP_KINDS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);                  /* user space sets the real size */
} events SEC(".maps");

/* Template for new stats entries (the value is too large for the BPF stack). */
static const struct platoon_thread_stats zero_stats;

static __always_inline void count_drop(__u32 kind)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &kind);

	if (n)
		*n += 1;    /* per-CPU slot: no atomics needed */
}

static __always_inline void count_untracked(__u32 tid)
{
	__u8 one = 1;

	if (bpf_map_update_elem(&untracked, &tid, &one, BPF_NOEXIST) == 0)
		count_drop(PLATOON_DROP_THREADS);
}

/* The hot-path target test. `targets` (above) is the bounded set user space fills and lists;
 * this bitmap over all possible tgids (pid_max <= PID_MAX_LIMIT = 2^22 on 64-bit: 512 KiB of
 * .bss) mirrors it so that the test every sched_switch makes for prev and next is one load
 * and a shift, not two hash lookups (measured: ~35 ns each here; the filter runs on every
 * switch of every process). Written only through add_target()/drop_target() below and the
 * collector's Impl::target(), which keep both in step. */
#define TARGET_BITS_WORDS ((1u << 22) / 64)
__u64 target_bits[TARGET_BITS_WORDS];

/* The word of a tgid's bit: masked rather than range-checked, so the verifier sees the bound
 * directly (a tgid is below PID_MAX_LIMIT anyway). */
static __always_inline __u32 target_word(__u32 tgid)
{
	return (tgid >> 6) & (TARGET_BITS_WORDS - 1);
}

static __always_inline bool is_target(__u32 tgid)
{
	return tgid && ((target_bits[target_word(tgid)] >> (tgid & 63)) & 1);
}

/* Bits are set and cleared with atomic adds (BPF_XADD, every kernel) rather than atomic or/and
 * (BPF_ATOMIC, 5.12+): a program holding those does not load on older kernels at all. An add
 * is a correct set/clear only if the bit is known to be clear/set, so the `targets` hash is the
 * arbiter: only the caller whose insert (BPF_NOEXIST) or delete succeeds touches the bit, and
 * the collector's Impl::target() follows the same rule from user space. */
static __always_inline void add_target(__u32 tgid)
{
	__u32 word = target_word(tgid);
	__u8 one = 1;
	long err;

	if (!tgid || tgid >= TARGET_BITS_WORDS * 64)
		return;
	err = bpf_map_update_elem(&targets, &tgid, &one, BPF_NOEXIST);
	if (err == -EEXIST)
		return;     /* already a target: its bit is set */
	if (err) {
		count_drop(PLATOON_DROP_TARGETS);
		return;
	}
	__sync_fetch_and_add(&target_bits[word], 1ull << (tgid & 63));
}

static __always_inline void drop_target(__u32 tgid)
{
	__u32 word = target_word(tgid);

	if (!tgid || tgid >= TARGET_BITS_WORDS * 64)
		return;
	if (bpf_map_delete_elem(&targets, &tgid))
		return;     /* not a target (or another CPU dropped it first) */
	__sync_fetch_and_add(&target_bits[word], -(1ull << (tgid & 63)));
}

/* Reads a task field: a plain load under tp_btf, a CO-RE probe read under raw_tp. */
#define TASK_FIELD(btf, t, field) ((btf) ? (t)->field : BPF_CORE_READ((t), field))

static __always_inline void read_comm(char dst[PLATOON_COMM_LEN], struct task_struct *t)
{
	bpf_probe_read_kernel(dst, PLATOON_COMM_LEN, &t->comm);
}

/* The stats entry of `tid`, created zeroed when missing and `create`. A task that is already
 * exiting is never given a new entry: user space deletes an exited thread's entry once it has
 * reported it, and the dying task's last switch-out must not bring it back. */
static __always_inline struct platoon_thread_stats *
thread_stats(__u32 tid, __u32 tgid, struct task_struct *t, __u64 now, bool create)
{
	struct platoon_thread_stats *s;
	long err;

	s = bpf_map_lookup_elem(&stats, &tid);
	if (s || !create)
		return s;
	if (BPF_CORE_READ(t, flags) & PF_EXITING)
		return NULL;
	err = bpf_map_update_elem(&stats, &tid, &zero_stats, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_untracked(tid);
		return NULL;
	}
	s = bpf_map_lookup_elem(&stats, &tid);
	if (!s)
		return NULL;
	if (!s->first_seen_ns) {
		s->tid = tid;
		s->pid = tgid;
		s->first_seen_ns = now;
		s->last_seen_ns = now;
		read_comm(s->comm, t);
	}
	return s;
}

/* Adds to the pair {tid, other, kind}. Only events that know the other task's identity
 * (`o`, or the interrupt pseudo-task when other == 0) create a pair; the rest add to an
 * existing one. */
static __always_inline void add_pair(__u32 tid, __u32 other, __u32 kind, struct task_struct *o,
				     bool create, __u64 count, __u64 ns)
{
	struct platoon_pair_key key = { .tid = tid, .other = other, .kind = kind };
	struct platoon_pair_value *v, init = {};
	long err;

	v = bpf_map_lookup_elem(&pairs, &key);
	if (!v) {
		if (!create)
			return;
		if (o) {
			init.other_pid = BPF_CORE_READ(o, tgid);
			read_comm(init.other_comm, o);
		} else {
			__builtin_memcpy(init.other_comm, "[interrupt]", sizeof("[interrupt]"));
		}
		err = bpf_map_update_elem(&pairs, &key, &init, BPF_NOEXIST);
		if (err && err != -EEXIST) {
			count_drop(PLATOON_DROP_PAIRS);
			return;
		}
		v = bpf_map_lookup_elem(&pairs, &key);
		if (!v)
			return;
	}
	/* Only non-zero adds: clang turns an atomic add of a constant 0 into an atomic or
	 * (BPF_ATOMIC, 5.12+), which would keep the whole program off older kernels. */
	if (count)
		__sync_fetch_and_add(&v->count, count);
	if (ns)
		__sync_fetch_and_add(&v->ns, ns);
}

/* True when running on an interrupt stack (hard irq, or a softirq run at irq exit), where
 * `current` is whatever task happened to be interrupted: a timer expiring on a CPU that runs
 * a compiler is not "woken by the compiler". The kernel's own test (preempt_count) is a
 * per-CPU variable that BPF reaches only through kallsyms with CONFIG_KALLSYMS_ALL, which
 * kernels often lack. Instead: the program's context (raw_tp's argument array, tp_btf's
 * trampoline frame) lives on the stack the tracepoint fired on, so if it is not inside
 * current's task stack we are on an interrupt stack. (Not our own frame: since 6.14 large BPF
 * frames live on a per-CPU private stack.) The pointer is copied as plain bytes (root may see
 * addresses). THREAD_SIZE is 16 KiB on x86-64 and arm64 without KASAN; with KASAN's 32 KiB
 * stacks a context more than 16 KiB deep would be misread as interrupt context (rare). */
#define PLATOON_THREAD_SIZE (16 * 1024)

static __always_inline bool in_interrupt_context(void *ctx)
{
	struct task_struct *cur = (struct task_struct *)bpf_get_current_task();
	unsigned long stack = (unsigned long)BPF_CORE_READ(cur, stack);
	unsigned long here = 0;
	void *volatile slot = ctx;

	if (bpf_probe_read_kernel(&here, sizeof(here), (const void *)&slot) || !stack)
		return false;
	return here - stack >= PLATOON_THREAD_SIZE;
}

static __always_inline void *reserve_event(__u64 size)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e)
		count_drop(PLATOON_DROP_RINGBUF);
	return e;
}

static __always_inline void submit_event(void *e)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= targ_wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
}

static __always_inline void fill_header(struct platoon_event_header *h, __u64 now, __u16 type,
					__u32 cpu, __u32 tid)
{
	h->ts_ns = now;
	h->type = type;
	h->cpu = cpu;
	h->tid = tid;
}

/* ---- sched_switch ----
 * prev leaves the CPU: its run interval ends. It switched out voluntarily iff it was not
 * preempted and its state at __schedule was not runnable (prev_state != 0), which is exactly
 * when the kernel books nvcsw rather than nivcsw. If it is still TASK_RUNNING now it stays on
 * the run queue (preempted, or a block that a signal cancelled), so its wait starts here, as
 * schedstat's sched_info_depart does. next arrives: its wait (if any) ends, its run starts. */
static __always_inline int on_switch(bool btf, bool preempt, struct task_struct *prev,
				     struct task_struct *next, unsigned int prev_state)
{
	__u32 prev_tgid = TASK_FIELD(btf, prev, tgid);
	__u32 next_tgid = TASK_FIELD(btf, next, tgid);
	bool prev_target = is_target(prev_tgid);
	bool next_target = is_target(next_tgid);
	struct platoon_thread_stats *s;
	__u32 prev_tid, next_tid, cpu;
	__u64 now;

	if (!prev_target && !next_target)
		return 0;

	now = bpf_ktime_get_boot_ns();
	cpu = bpf_get_smp_processor_id();
	prev_tid = TASK_FIELD(btf, prev, pid);
	next_tid = TASK_FIELD(btf, next, pid);

	if (prev_target) {
		s = thread_stats(prev_tid, prev_tgid, prev, now, true);
		if (s && !s->exited) {
			if (s->on_cpu) {
				s->run_ns += now - s->run_start_ns;
				s->on_cpu = 0;
			}
			/* Still marked queued while it is leaving a CPU: its switch-in never reached
			 * the tracepoint (seen on this kernel for switches away from some tasks; perf
			 * record misses them too). Where the wait ended and the run began is unknown,
			 * so that interval is dropped rather than booked as one long wait. */
			s->runnable = 0;
			if (!preempt && prev_state != 0)
				s->switches_voluntary++;
			else
				s->switches_involuntary++;
			if (task_state_fast(btf, prev) == TASK_RUNNING) {
				s->runnable = 1;
				s->wait_start_ns = now;
				s->preemptor_tid = next_tid;
				add_pair(prev_tid, next_tid, PLATOON_PAIR_PREEMPTED_BY, next, true, 1, 0);
			}
			s->last_seen_ns = now;
			s->last_cpu = cpu;
		}
	}

	if (next_target) {
		s = thread_stats(next_tid, next_tgid, next, now, true);
		if (s && !s->exited) {
			if (s->runnable) {
				__u64 delta = now - s->wait_start_ns;
				__u32 slot = log2_u64(delta);

				s->wait_ns += delta;
				if (slot >= PLATOON_RUNQ_SLOTS)
					slot = PLATOON_RUNQ_SLOTS - 1;
				HIST_INC(s->runq_hist, slot, PLATOON_RUNQ_SLOTS);
				if (delta > s->runq_max_ns)
					s->runq_max_ns = delta;
				if (s->preemptor_tid)
					add_pair(next_tid, s->preemptor_tid, PLATOON_PAIR_PREEMPTED_BY, NULL,
						 false, 0, delta);
				s->runnable = 0;
				s->preemptor_tid = 0;
			}
			s->on_cpu = 1;
			s->run_start_ns = now;
			/* comm is refreshed now and then, not on every switch: at each of a thread's
			 * first 16 switch-ins (threads name themselves right after they start), then
			 * every 64th, so a rename shows up and the copy stays off most switches. */
			if (s->switch_ins < 16 || (s->switch_ins & 63) == 0)
				read_comm(s->comm, next);
			s->switch_ins++;
			if (cpu < targ_cpu_slots)
				HIST_INC(s->cpu_switch_ins, cpu, PLATOON_MAX_CPUS);
			else
				s->cpu_overflow++;
			s->last_cpu = cpu;
			s->last_seen_ns = now;
		}
	}

	if (targ_events) {
		struct platoon_ev_switch *e = reserve_event(sizeof(*e));

		if (e) {
			fill_header(&e->h, now, PLATOON_EV_SWITCH, cpu, prev_tid);
			e->prev_pid = prev_tgid;
			e->next_tid = next_tid;
			e->next_pid = next_tgid;
			e->prev_state = preempt ? 0 : prev_state;
			e->prev_prio = BPF_CORE_READ(prev, prio);
			e->next_prio = BPF_CORE_READ(next, prio);
			read_comm(e->prev_comm, prev);
			read_comm(e->next_comm, next);
			submit_event(e);
		}
	}
	return 0;
}

/* prev_state: the 4th tracepoint argument where it exists (see targ_switch_state_arg), read
 * only then; otherwise prev's state now, which differs only for a block that a pending signal
 * cancelled (state already back to running: booked involuntary, the kernel books voluntary). */
static __always_inline unsigned int switch_prev_state(bool btf, unsigned long long *ctx,
						      struct task_struct *prev)
{
	if (targ_switch_state_arg)
		return (unsigned int)ctx[3];
	return task_state_fast(btf, prev);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(true, preempt, prev, next, switch_prev_state(true, ctx, prev));
}

SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(false, preempt, prev, next, switch_prev_state(false, ctx, prev));
}

/* ---- wakeups ----
 * sched_waking runs in the waker's context (try_to_wake_up on the waker's CPU), so that is
 * where WOKEN_BY is booked; sched_wakeup may run later on the wakee's CPU from an IPI, where
 * `current` is unrelated. The run-queue wait starts at sched_wakeup(_new), when the task is
 * enqueued (what runqlat does). A wakeup of a task that is still on its CPU (woken before it
 * got to block) or already queued starts nothing. */
static __always_inline void emit_wake(__u16 type, struct task_struct *p, __u32 tid, __u32 tgid,
				      __u64 now, __u32 waker_tid)
{
	struct platoon_ev_wake *e = reserve_event(sizeof(*e));

	if (!e)
		return;
	fill_header(&e->h, now, type, bpf_get_smp_processor_id(), tid);
	e->pid = tgid;
	e->target_cpu = task_cpu(p);
	e->prio = BPF_CORE_READ(p, prio);
	e->waker_tid = waker_tid;
	read_comm(e->comm, p);
	submit_event(e);
}

static __always_inline int on_waking(void *ctx, bool btf, struct task_struct *p)
{
	__u32 tgid = TASK_FIELD(btf, p, tgid);
	struct task_struct *waker;
	__u32 tid, waker_tid;

	if (!is_target(tgid))
		return 0;
	tid = TASK_FIELD(btf, p, pid);
	if (in_interrupt_context(ctx)) {
		waker = NULL;
		waker_tid = 0;
	} else {
		waker = (struct task_struct *)bpf_get_current_task();
		waker_tid = (__u32)bpf_get_current_pid_tgid();
	}
	add_pair(tid, waker_tid, PLATOON_PAIR_WOKEN_BY, waker, true, 1, 0);
	if (targ_events)
		emit_wake(PLATOON_EV_WAKING, p, tid, tgid, bpf_ktime_get_boot_ns(), waker_tid);
	return 0;
}

static __always_inline int on_wakeup(bool btf, struct task_struct *p, __u16 type)
{
	__u32 tgid = TASK_FIELD(btf, p, tgid);
	struct platoon_thread_stats *s;
	__u32 tid;
	__u64 now;

	if (!is_target(tgid))
		return 0;
	now = bpf_ktime_get_boot_ns();
	tid = TASK_FIELD(btf, p, pid);
	s = thread_stats(tid, tgid, p, now, true);
	if (s && !s->exited) {
		s->wakeups++;
		if (!s->on_cpu && !s->runnable) {
			s->runnable = 1;
			s->wait_start_ns = now;
			s->preemptor_tid = 0;
		}
		s->last_seen_ns = now;
	}
	if (targ_events)
		emit_wake(type, p, tid, tgid, now, (__u32)bpf_get_current_pid_tgid());
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(waking_btf, struct task_struct *p)
{
	return on_waking(ctx, true, p);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(waking_raw, struct task_struct *p)
{
	return on_waking(ctx, false, p);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(wakeup_btf, struct task_struct *p)
{
	return on_wakeup(true, p, PLATOON_EV_WAKEUP);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(wakeup_raw, struct task_struct *p)
{
	return on_wakeup(false, p, PLATOON_EV_WAKEUP);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(wakeup_new_btf, struct task_struct *p)
{
	return on_wakeup(true, p, PLATOON_EV_WAKEUP_NEW);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(wakeup_new_raw, struct task_struct *p)
{
	return on_wakeup(false, p, PLATOON_EV_WAKEUP_NEW);
}

/* ---- sched_migrate_task ----
 * Fires from set_task_cpu even when the CPU does not change; se.nr_migrations counts only
 * real changes, and so do we. The task has not moved yet: its CPU is the origin. */
static __always_inline int on_migrate(bool btf, struct task_struct *p, int dest_cpu)
{
	__u32 tgid = TASK_FIELD(btf, p, tgid);
	struct platoon_thread_stats *s;
	__u32 tid, orig_cpu;
	__u64 now;

	if (!is_target(tgid))
		return 0;
	orig_cpu = task_cpu(p);
	if (orig_cpu == (__u32)dest_cpu)
		return 0;
	now = bpf_ktime_get_boot_ns();
	tid = TASK_FIELD(btf, p, pid);
	s = thread_stats(tid, tgid, p, now, true);
	if (s && !s->exited)
		s->migrations++;
	if (targ_events) {
		struct platoon_ev_migrate *e = reserve_event(sizeof(*e));

		if (e) {
			fill_header(&e->h, now, PLATOON_EV_MIGRATE, bpf_get_smp_processor_id(), tid);
			e->pid = tgid;
			e->orig_cpu = orig_cpu;
			e->dest_cpu = dest_cpu;
			e->prio = BPF_CORE_READ(p, prio);
			read_comm(e->comm, p);
			submit_event(e);
		}
	}
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(migrate_btf, struct task_struct *p, int dest_cpu)
{
	return on_migrate(true, p, dest_cpu);
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(migrate_raw, struct task_struct *p, int dest_cpu)
{
	return on_migrate(false, p, dest_cpu);
}

/* ---- sched_process_exit ----
 * Runs in the exiting thread. Its run so far is booked and the entry marked exited, after
 * which no hook touches it: user space reports it once and deletes it. When the whole group
 * is gone (signal->live reached 0 before this tracepoint), the tgid leaves `targets` so a
 * recycled pid is not watched by accident. */
static __always_inline int on_exit(bool btf, struct task_struct *p)
{
	__u32 tgid = TASK_FIELD(btf, p, tgid);
	struct platoon_thread_stats *s;
	__u32 tid;
	__u64 now;

	if (!is_target(tgid))
		return 0;
	now = bpf_ktime_get_boot_ns();
	tid = TASK_FIELD(btf, p, pid);
	s = bpf_map_lookup_elem(&stats, &tid);
	if (s && !s->exited) {
		if (s->on_cpu)
			s->run_ns += now - s->run_start_ns;
		s->on_cpu = 0;
		s->runnable = 0;
		s->epoll_enter_ns = 0;
		s->last_seen_ns = now;
		s->exited = 1;
	} else if (!s) {
		bpf_map_delete_elem(&untracked, &tid);  /* its tid may come back as a new thread */
	}
	if (BPF_CORE_READ(p, signal, live.counter) == 0)
		drop_target(tgid);
	if (targ_events) {
		struct platoon_ev_exit *e = reserve_event(sizeof(*e));

		if (e) {
			fill_header(&e->h, now, PLATOON_EV_EXIT, bpf_get_smp_processor_id(), tid);
			e->pid = tgid;
			e->pad = 0;
			submit_event(e);
		}
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *p)
{
	return on_exit(true, p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(exit_raw, struct task_struct *p)
{
	return on_exit(false, p);
}

/* ---- comm matching: new processes whose name is targ_comm become targets ----
 * exec: the execing thread is the group leader by now and its comm is the new name.
 * fork: a new process (not a thread) inherits its parent's comm (an nginx master forking
 * workers), so it matches before it ever execs. */
static __always_inline bool comm_matches(struct task_struct *t)
{
	char comm[PLATOON_COMM_LEN];

	read_comm(comm, t);
#pragma unroll
	for (int i = 0; i < PLATOON_COMM_LEN; i++) {
		if (comm[i] != targ_comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

static __always_inline void add_target_if_match(struct task_struct *t)
{
	__u32 tgid;

	if (!targ_comm_set)
		return;
	tgid = BPF_CORE_READ(t, tgid);
	if (BPF_CORE_READ(t, pid) != tgid || !comm_matches(t))
		return;
	add_target(tgid);
}

/* exec renames the task: a tracked thread (say, a `-- CMD` child that was `platoon` until
 * now) takes its new name at once rather than at its next comm refresh. */
static __always_inline void on_exec(bool btf, struct task_struct *p)
{
	__u32 tid = TASK_FIELD(btf, p, pid);
	struct platoon_thread_stats *s;

	add_target_if_match(p);
	s = bpf_map_lookup_elem(&stats, &tid);
	if (s)
		read_comm(s->comm, p);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec_btf, struct task_struct *p)
{
	on_exec(true, p);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(exec_raw, struct task_struct *p)
{
	on_exec(false, p);
	return 0;
}

/* fork: with targ_follow_forks a new process (not a thread: CLONE_THREAD keeps the tgid)
 * whose parent is a target becomes one, before its first wakeup (wake_up_new_task follows this
 * tracepoint), so nothing of its life is missed. */
static __always_inline void on_fork(bool btf, struct task_struct *parent, struct task_struct *child)
{
	__u32 child_tgid = TASK_FIELD(btf, child, tgid);

	if (targ_follow_forks && TASK_FIELD(btf, child, pid) == child_tgid &&
	    is_target(TASK_FIELD(btf, parent, tgid)))
		add_target(child_tgid);
	add_target_if_match(child);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	on_fork(true, parent, child);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child)
{
	on_fork(false, parent, child);
	return 0;
}

/* ---- epoll_wait / epoll_pwait / epoll_pwait2 ----
 * Syscall tracepoints (they need tracefs): they fire only for these three syscalls, unlike
 * raw sys_enter, so other syscalls pay nothing. Every process on the machine runs these
 * programs, so the target test comes before anything else, the clock included. (fentry/fexit
 * would be cheaper still, but this kernel has no BPF trampolines for functions.) */
static __always_inline struct platoon_thread_stats *current_stats(bool create, __u64 now)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if (!is_target(tgid))
		return NULL;
	return thread_stats((__u32)id, tgid, (struct task_struct *)bpf_get_current_task(), now,
			    create);
}

static __always_inline int epoll_enter(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct platoon_thread_stats *s;
	__u64 now;

	if (!is_target(id >> 32))   /* before the clock: most callers are not targets */
		return 0;
	now = bpf_ktime_get_boot_ns();
	s = thread_stats((__u32)id, id >> 32, (struct task_struct *)bpf_get_current_task(), now, true);
	if (s && !s->exited)
		s->epoll_enter_ns = now;
	return 0;
}

static __always_inline int epoll_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct platoon_thread_stats *s;
	__u64 enter, now;

	if (!is_target(id >> 32))
		return 0;
	now = bpf_ktime_get_boot_ns();
	s = thread_stats((__u32)id, id >> 32, NULL, now, false);
	if (!s || s->exited || !s->epoll_enter_ns)
		return 0;
	enter = s->epoll_enter_ns;
	s->epoll_enter_ns = 0;
	if (ret >= 0) {
		s->io_cycles++;
		s->io_events += ret;
		HIST_INC(s->io_events_hist, linear_slot(ret, PLATOON_BATCH_SLOTS), PLATOON_BATCH_SLOTS);
		s->io_blocked_ns += now - enter;
	}
	if (targ_events) {
		struct platoon_ev_epoll *e = reserve_event(sizeof(*e));

		if (e) {
			fill_header(&e->h, now, PLATOON_EV_EPOLL, bpf_get_smp_processor_id(), s->tid);
			e->nevents = ret;
			e->pad = 0;
			e->enter_ns = enter;
			submit_event(e);
		}
	}
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_epoll_wait")
int epoll_wait_enter(struct trace_event_raw_sys_enter *ctx)
{
	return epoll_enter();
}

SEC("tracepoint/syscalls/sys_exit_epoll_wait")
int epoll_wait_exit(struct trace_event_raw_sys_exit *ctx)
{
	return epoll_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_epoll_pwait")
int epoll_pwait_enter(struct trace_event_raw_sys_enter *ctx)
{
	return epoll_enter();
}

SEC("tracepoint/syscalls/sys_exit_epoll_pwait")
int epoll_pwait_exit(struct trace_event_raw_sys_exit *ctx)
{
	return epoll_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_epoll_pwait2")
int epoll_pwait2_enter(struct trace_event_raw_sys_enter *ctx)
{
	return epoll_enter();
}

SEC("tracepoint/syscalls/sys_exit_epoll_pwait2")
int epoll_pwait2_exit(struct trace_event_raw_sys_exit *ctx)
{
	return epoll_exit(ctx->ret);
}

/* ---- runtime USDT probes (provider "platoon", see runtime/probes.hpp) ----
 * Attached per target pid, so no tgid check; booked on the firing thread (the carrier). */
static __always_inline void emit_runtime(__u16 type, __u32 tid, __u64 now, long carrier, long a,
					 long b)
{
	struct platoon_ev_runtime *e = reserve_event(sizeof(*e));

	if (!e)
		return;
	fill_header(&e->h, now, type, bpf_get_smp_processor_id(), tid);
	e->carrier = carrier;
	e->a = a;
	e->b = b;
	submit_event(e);
}

/* One hit per drain (the runtime's combined `drain` probe): every uprobe hit is a trap into
 * the kernel, so queue depth and fibers run arrive together at the drain's end. */
SEC("usdt")
int BPF_USDT(usdt_drain, long carrier, long depth, long fibers_run, long ns)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct platoon_thread_stats *s = current_stats(true, now);

	if (!s || s->exited)
		return 0;
	s->drains++;
	s->drain_depth_sum += depth;
	HIST_INC(s->drain_depth_hist, linear_slot(depth, PLATOON_BATCH_SLOTS), PLATOON_BATCH_SLOTS);
	s->drain_fibers_run += fibers_run;
	s->drain_ns += ns;
	if (targ_events)
		emit_runtime(PLATOON_EV_DRAIN, s->tid, now, carrier, depth, fibers_run);
	return 0;
}

SEC("usdt")
int BPF_USDT(usdt_steal, long thief, long victim, long count)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct platoon_thread_stats *s = current_stats(true, now);

	if (!s || s->exited)
		return 0;
	s->steals++;
	s->stolen_fibers += count;
	if (targ_events)
		emit_runtime(PLATOON_EV_STEAL, s->tid, now, thief, victim, count);
	return 0;
}

/* ---- attach-time seeding ----
 * Threads that already exist when we attach: without this, a thread that is running (or
 * queued) at attach time has no entry until its first event, and a CPU hog alone on its CPU
 * may never have one. This task iterator, run once by user space right after the hooks are
 * attached (and after each add_pid), creates the missing entries with the in-flight state the
 * task is in now: on a CPU (run counted from now), or runnable (wait counted from now). */
SEC("iter/task")
int seed_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct platoon_thread_stats *s;
	__u32 tid, tgid;
	__u64 now;
	long err;

	if (!t)
		return 0;
	tgid = t->tgid;
	if (!is_target(tgid) || (t->flags & PF_EXITING))
		return 0;
	tid = t->pid;
	if (bpf_map_lookup_elem(&stats, &tid))
		return 0;
	err = bpf_map_update_elem(&stats, &tid, &zero_stats, BPF_NOEXIST);
	if (err) {
		if (err != -EEXIST)
			count_untracked(tid);
		return 0;   /* EEXIST: a hook got there first and knows better */
	}
	s = bpf_map_lookup_elem(&stats, &tid);
	if (!s)
		return 0;
	now = bpf_ktime_get_boot_ns();
	s->tid = tid;
	s->pid = tgid;
	s->first_seen_ns = now;
	s->last_seen_ns = now;
	s->seeded = 1;
	read_comm(s->comm, t);
	s->last_cpu = task_cpu(t);
	if (t->on_cpu) {
		s->on_cpu = 1;
		s->run_start_ns = now;
	} else if (task_state(t) == TASK_RUNNING) {
		s->runnable = 1;
		s->wait_start_ns = now;
	}
	return 0;
}
