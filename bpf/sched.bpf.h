/* The scheduler hooks: sched_switch, the wakeups (waking, wakeup, wakeup_new) and
 * sched_migrate_task. Each hook is one on_X body, entered from a tp_btf and a raw_tp program. */
#ifndef PLATOON_BPF_SCHED_BPF_H
#define PLATOON_BPF_SCHED_BPF_H

#include "bpf/maps.bpf.h"
#include "bpf/stage.bpf.h"
#include "bpf/targets.bpf.h"
#include "bpf/thread_stats.bpf.h"
#include "bpf/core_fixes.bpf.h"
#include "bpf/bits.bpf.h"
#include "bpf/in_epoll.bpf.h"
#include "bpf/wait_split.bpf.h"

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
		s = thread_stats(in_store(btf), prev_tid, prev_tgid, prev, now, true);
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
			if (!preempt && prev_state != 0) {
				s->switches_voluntary++;
				/* Going to sleep inside epoll_wait: its blocked time starts (the
				 * first sleep of the call; epoll_exit ends it). */
				if (btf && targ_epoll_at_switch && !s->epoll_enter_ns &&
				    blocked_in_epoll(prev))
					s->epoll_enter_ns = now;
			} else
				s->switches_involuntary++;
			if (task_state_fast(btf, prev) == TASK_RUNNING) {
				bool throttled = group_throttled(btf, prev);

				s->runnable = 1;
				s->wait_start_ns = now;
				wait_split_start(btf, s, rq_of(btf, prev), cpu,
						 throttled ? PLATOON_WAIT_THROTTLED : 0);
				log_state(s, now, throttled ? PLATOON_REQ_THROTTLED : PLATOON_REQ_RUNNABLE);
				s->preemptor_tid = next_tid;
				add_pair(prev_tid, next_tid, PLATOON_PAIR_PREEMPTED_BY, next, true, 1, 0);
			} else {
				log_state(s, now, PLATOON_REQ_BLOCKED);
			}
			s->last_seen_ns = now;
			s->last_cpu = cpu;
		}
	}

	if (next_target) {
		s = thread_stats(in_store(btf), next_tid, next_tgid, next, now, true);
		if (s && !s->exited) {
			if (s->runnable) {
				__u64 delta = now - s->wait_start_ns;
				__u32 slot = log2_u64(delta);

				s->wait_ns += delta;
				wait_split_end(btf, s, rq_of(btf, next), cpu, delta);
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
			log_state(s, now, PLATOON_REQ_RUNNING);
			/* comm is refreshed now and then, not on every switch: at each of a thread's
			 * first 16 switch-ins (threads name themselves right after they start), then
			 * every 64th, so a rename shows up and the copy stays off most switches. */
			if (s->switch_ins < 16 || (s->switch_ins & 63) == 0)
				read_comm_fast(btf, s->comm, next);
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
		struct platoon_stage *st;
		struct platoon_ev_switch *e = reserve_event(sizeof(*e), &st);

		if (e) {
			fill_header(&e->h, now, PLATOON_EV_SWITCH, cpu, prev_tid);
			e->prev_pid = prev_tgid;
			e->next_tid = next_tid;
			e->next_pid = next_tgid;
			e->prev_state = preempt ? 0 : prev_state;
			e->prev_prio = TASK_FIELD(btf, prev, prio);
			e->next_prio = TASK_FIELD(btf, next, prio);
			read_comm_fast(btf, e->prev_comm, prev);
			read_comm_fast(btf, e->next_comm, next);
			submit_event(e, st, sizeof(*e));
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

static __always_inline bool in_interrupt_context(bool btf, void *ctx)
{
	unsigned long stack = btf ? (unsigned long)bpf_get_current_task_btf()->stack
				  : (unsigned long)BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), stack);
	unsigned long here = 0;
	void *volatile slot = ctx;

	if (bpf_probe_read_kernel(&here, sizeof(here), (const void *)&slot) || !stack)
		return false;
	return here - stack >= PLATOON_THREAD_SIZE;
}

/* ---- wakeups ----
 * sched_waking runs in the waker's context (try_to_wake_up on the waker's CPU), so that is
 * where WOKEN_BY is booked; sched_wakeup may run later on the wakee's CPU from an IPI, where
 * `current` is unrelated. The run-queue wait starts at sched_wakeup(_new), when the task is
 * enqueued (what runqlat does). A wakeup of a task that is still on its CPU (woken before it
 * got to block) or already queued starts nothing. */
static __always_inline void emit_wake(bool btf, __u16 type, struct task_struct *p, __u32 tid,
				      __u32 tgid, __u64 now, __u32 waker_tid)
{
	struct platoon_stage *st;
	struct platoon_ev_wake *e = reserve_event(sizeof(*e), &st);

	if (!e)
		return;
	fill_header(&e->h, now, type, bpf_get_smp_processor_id(), tid);
	e->pid = tgid;
	e->target_cpu = task_cpu_fast(btf, p);
	e->prio = TASK_FIELD(btf, p, prio);
	e->waker_tid = waker_tid;
	read_comm_fast(btf, e->comm, p);
	submit_event(e, st, sizeof(*e));
}

static __always_inline int on_waking(void *ctx, bool btf, struct task_struct *p)
{
	__u32 tgid = TASK_FIELD(btf, p, tgid);
	struct task_struct *waker;
	__u32 tid, waker_tid;

	if (!is_target(tgid))
		return 0;
	tid = TASK_FIELD(btf, p, pid);
	if (in_interrupt_context(btf, ctx)) {
		waker = NULL;
		waker_tid = 0;
	} else {
		waker = (struct task_struct *)bpf_get_current_task();
		waker_tid = (__u32)bpf_get_current_pid_tgid();
	}
	add_pair(tid, waker_tid, PLATOON_PAIR_WOKEN_BY, waker, true, 1, 0);
	if (targ_events)
		emit_wake(btf, PLATOON_EV_WAKING, p, tid, tgid, bpf_ktime_get_boot_ns(), waker_tid);
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
	s = thread_stats(in_store(btf), tid, tgid, p, now, true);
	if (s && !s->exited) {
		s->wakeups++;
		if (!s->on_cpu && !s->runnable) {
			__u32 cpu = task_cpu_fast(btf, p);
			struct rq *rq = rq_of(btf, p);
			bool throttled = group_throttled(btf, p);

			s->runnable = 1;
			s->wait_start_ns = now;
			/* Woken into a throttled group (6.18 parks it on the group's limbo list at
			 * once), else onto an idle CPU, else behind whatever runs there. */
			wait_split_start(btf, s, rq, cpu,
					 throttled ? PLATOON_WAIT_THROTTLED
					 : cpu_idle_now(btf, rq) ? PLATOON_WAIT_IDLE_CPU
								 : 0);
			log_state(s, now, throttled ? PLATOON_REQ_THROTTLED : PLATOON_REQ_RUNNABLE);
			s->preemptor_tid = 0;
		}
		s->last_seen_ns = now;
	}
	if (targ_events)
		emit_wake(btf, type, p, tid, tgid, now, (__u32)bpf_get_current_pid_tgid());
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
	s = thread_stats(in_store(btf), tid, tgid, p, now, true);
	if (s && !s->exited)
		s->migrations++;
	if (targ_events) {
		struct platoon_stage *st;
		struct platoon_ev_migrate *e = reserve_event(sizeof(*e), &st);

		if (e) {
			fill_header(&e->h, now, PLATOON_EV_MIGRATE, bpf_get_smp_processor_id(), tid);
			e->pid = tgid;
			e->orig_cpu = orig_cpu;
			e->dest_cpu = dest_cpu;
			e->prio = TASK_FIELD(btf, p, prio);
			read_comm_fast(btf, e->comm, p);
			submit_event(e, st, sizeof(*e));
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

#endif
