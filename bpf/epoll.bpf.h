/* The epoll_wait family: time blocked in the kernel and events returned per call. */
#ifndef PLATOON_BPF_EPOLL_BPF_H
#define PLATOON_BPF_EPOLL_BPF_H

#include "bpf/maps.bpf.h"
#include "bpf/stage.bpf.h"
#include "bpf/targets.bpf.h"
#include "bpf/thread_stats.bpf.h"
#include "bpf/bits.bpf.h"

/* ---- epoll_wait / epoll_pwait / epoll_pwait2 ----
 * Syscall tracepoints (they need tracefs): the programs run only for these three syscalls,
 * unlike raw sys_enter. Other syscalls still pay a little: while any syscall tracepoint is
 * attached, the kernel sends every syscall of every task through its traced exit path, which
 * tests the syscall number against the enabled set (+9-10 ns per getppid here, 88 -> 97 ns;
 * docs/benchmarks.md). Every process on the machine runs these programs, so the target test
 * comes before anything else, the clock included. (fentry/fexit or kprobes would spare the
 * other syscalls, but this kernel has neither BPF trampolines nor kprobes.)
 *
 * With targ_epoll_at_switch only the exit tracepoints are attached: a call's blocked time
 * starts where sched_switch sees the thread go to sleep inside it (in_epoll.bpf.h), which
 * the switch hook tests anyway, so the enter hook and its ~200 ns per call are saved. The
 * blocked time then runs from the call's first sleep to its return (the few hundred ns
 * between syscall entry and that sleep are not in it, and a call that returns without
 * sleeping adds none); cycles and events per call are the same either way. */

static __always_inline int epoll_enter(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct platoon_thread_stats *s;
	__u64 now;

	if (!is_target(id >> 32))   /* before the clock: most callers are not targets */
		return 0;
	now = bpf_ktime_get_boot_ns();
	s = thread_stats(targ_task_storage, (__u32)id, id >> 32, current_task_for_stats(), now, true);
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
	s = thread_stats(targ_task_storage, (__u32)id, id >> 32, current_task_for_stats(), 0, false);
	if (!s || s->exited)
		return 0;
	enter = s->epoll_enter_ns;
	/* With the enter hook, a call without its enter began before attach: not counted. */
	if (!enter && !targ_epoll_at_switch)
		return 0;
	s->epoll_enter_ns = 0;
	/* Most calls of a busy loop return without sleeping: without events to stamp they need
	 * no clock (a clock read is a good part of this program's cost in a VM). */
	now = enter || targ_events ? bpf_ktime_get_boot_ns() : 0;
	if (ret >= 0) {
		s->io_cycles++;
		s->io_events += ret;
		HIST_INC(s->io_events_hist, linear_slot(ret, PLATOON_BATCH_SLOTS), PLATOON_BATCH_SLOTS);
		if (enter)
			s->io_blocked_ns += now - enter;
	}
	if (targ_events) {
		struct platoon_stage *st;
		struct platoon_ev_epoll *e = reserve_event(sizeof(*e), &st);

		if (e) {
			fill_header(&e->h, now, PLATOON_EV_EPOLL, bpf_get_smp_processor_id(), s->tid);
			e->nevents = ret;
			e->pad = 0;
			e->enter_ns = enter ? enter : now;   /* a call that did not sleep: 0 long */
			submit_event(e, st, sizeof(*e));
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

#endif
