/* A thread's stats entry (found, or created zeroed) and its pair counters, and reading task
 * fields under either program type. */
#ifndef PLATOON_BPF_THREAD_STATS_BPF_H
#define PLATOON_BPF_THREAD_STATS_BPF_H

#include "bpf/maps.bpf.h"
#include "bpf/targets.bpf.h"

/* Reads a task field: a plain load under tp_btf, a CO-RE probe read under raw_tp. */
#define TASK_FIELD(btf, t, field) ((btf) ? (t)->field : BPF_CORE_READ((t), field))

static __always_inline void read_comm(char dst[PLATOON_COMM_LEN], struct task_struct *t)
{
	bpf_probe_read_kernel(dst, PLATOON_COMM_LEN, &t->comm);
}

/* The same, as two plain 8-byte loads where the program has BTF pointers (tp_btf): no helper
 * call, which matters on sched_switch's event path (two names per switch). */
static __always_inline void read_comm_fast(bool btf, char dst[PLATOON_COMM_LEN], struct task_struct *t)
{
	if (btf) {
		const __u64 *src = (const __u64 *)t->comm;

		((__u64 *)dst)[0] = src[0];
		((__u64 *)dst)[1] = src[1];
	} else {
		read_comm(dst, t);
	}
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

/* The calling thread's entry, for hooks that run in the thread they book on (USDT). */
static __always_inline struct platoon_thread_stats *current_stats(bool create, __u64 now)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if (!is_target(tgid))
		return NULL;
	return thread_stats((__u32)id, tgid, (struct task_struct *)bpf_get_current_task(), now,
			    create);
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

#endif
