/* The task iterators: the one that gives threads already running at attach time their entry,
 * and the one that hands user space the entries kept in task storage. */
#ifndef PLATOON_BPF_SEED_BPF_H
#define PLATOON_BPF_SEED_BPF_H

#include "bpf/maps.bpf.h"
#include "bpf/targets.bpf.h"
#include "bpf/thread_stats.bpf.h"
#include "bpf/core_fixes.bpf.h"

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

	if (!t)
		return 0;
	tgid = t->tgid;
	if (!is_target(tgid) || (t->flags & PF_EXITING))
		return 0;
	tid = t->pid;
	if (find_entry(targ_task_storage, tid, t))
		return 0;
	/* None: no room (counted). Stamped already: a hook got there first and knows better. */
	s = targ_task_storage ? create_stored(tid, t) : create_hashed(tid);
	if (!s || s->first_seen_ns)
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
		log_state(s, now, PLATOON_REQ_RUNNING);
	} else if (task_state(t) == TASK_RUNNING) {
		s->runnable = 1;
		s->wait_start_ns = now;
		log_state(s, now, PLATOON_REQ_RUNNABLE);  /* its group's throttling is not known */
	} else {
		log_state(s, now, PLATOON_REQ_BLOCKED);
	}
	return 0;
}

/* ---- reading task storage ----
 * With targ_task_storage user space reads every live entry through this walk (one read() of
 * the iterator's file per snapshot, instead of a batched hash lookup). Exited threads are in
 * exited_stats instead. An entry of a task that is no longer a target (its process was dropped)
 * is deleted here rather than shown. */
SEC("iter/task")
int dump_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct platoon_thread_stats *s;

	if (!t)
		return 0;
	s = bpf_task_storage_get(&thread_store, t, 0, 0);
	if (!s || s->exited)
		return 0;
	if (!is_target(t->tgid)) {
		if (bpf_task_storage_delete(&thread_store, t) == 0)
			untrack_one();
		return 0;
	}
	bpf_seq_write(ctx->meta->seq, s, sizeof(*s));
	return 0;
}

#endif
