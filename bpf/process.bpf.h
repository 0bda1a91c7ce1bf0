/* The process hooks: sched_process_exit, _exec and _fork (a thread leaves, a process renames
 * itself, a process is born and may become a target). tp_btf and raw_tp, as in sched.bpf.h. */
#ifndef PLATOON_BPF_PROCESS_BPF_H
#define PLATOON_BPF_PROCESS_BPF_H

#include "bpf/maps.bpf.h"
#include "bpf/stage.bpf.h"
#include "bpf/targets.bpf.h"
#include "bpf/thread_stats.bpf.h"

/* ---- sched_process_exit ----
 * Runs in the exiting thread. Its run so far is booked and the entry marked exited, after
 * which no hook touches it: user space reports it once and forgets it. An entry in task
 * storage goes with the task, so its final state is copied to exited_stats here. When the
 * whole group is gone (signal->live reached 0 before this tracepoint), the tgid leaves
 * `targets` so a recycled pid is not watched by accident. */

/* The exited copy of a stored entry. A copy still there under the same tid (the tid came back
 * within one snapshot) is replaced: the older thread's end is lost, and counted. */
static __always_inline void keep_exited(__u32 tid, struct platoon_thread_stats *s)
{
	if (bpf_map_update_elem(&exited_stats, &tid, s, BPF_NOEXIST) == 0)
		return;
	count_drop(PLATOON_DROP_THREADS);
	untrack_one();
	bpf_map_update_elem(&exited_stats, &tid, s, BPF_ANY);
}

static __always_inline int on_exit(bool btf, struct task_struct *p)
{
	__u32 tgid = TASK_FIELD(btf, p, tgid);
	struct platoon_thread_stats *s;
	__u32 tid;
	__u64 now;

	if (!is_target(tgid)) {
		/* A thread of a dropped target may still have a stored entry: it leaves uncounted. */
		if (in_store(btf) && bpf_task_storage_delete(&thread_store, p) == 0)
			untrack_one();
		return 0;
	}
	now = bpf_ktime_get_boot_ns();
	tid = TASK_FIELD(btf, p, pid);
	s = find_entry(in_store(btf), tid, p);
	if (s && !s->exited) {
		if (s->on_cpu)
			s->run_ns += now - s->run_start_ns;
		s->on_cpu = 0;
		s->runnable = 0;
		s->epoll_enter_ns = 0;
		s->last_seen_ns = now;
		s->exited = 1;
		if (in_store(btf))
			keep_exited(tid, s);
	} else if (!s) {
		bpf_map_delete_elem(&untracked, &tid);  /* its tid may come back as a new thread */
	}
	if (BPF_CORE_READ(p, signal, live.counter) == 0)
		drop_target(tgid);
	if (targ_events) {
		struct platoon_stage *st;
		struct platoon_ev_exit *e = reserve_event(sizeof(*e), &st);

		if (e) {
			fill_header(&e->h, now, PLATOON_EV_EXIT, bpf_get_smp_processor_id(), tid);
			e->pid = tgid;
			e->pad = 0;
			submit_event(e, st, sizeof(*e));
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
	s = find_entry(in_store(btf), tid, p);
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

#endif
