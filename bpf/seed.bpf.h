/* The task iterator that gives threads already running at attach time their entry. */
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

#endif
