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

/* Entries in task-local storage (targ_task_storage): how many exist, live or exited but not yet
 * reported, so that targ_threads_max bounds them as the hash's size bounds its entries. User
 * space subtracts the exited entries it has forgotten; the programs subtract what they drop.
 * Plain adds (BPF_XADD, every kernel: a fetching add needs 5.12 and -mcpu=v3), so the test
 * against the bound is a plain load and CPUs creating entries at the same moment may pass it
 * together: the bound holds to within one entry per CPU. */
__s64 tracked_threads;

static __always_inline void untrack_one(void)
{
	__sync_fetch_and_add(&tracked_threads, -1);
}

/* Thread t's entry in task storage, created zeroed unless the bound is reached (counted);
 * NULL also when a program on another CPU was creating it at that moment (the caller's second
 * lookup finds it). An entry not yet stamped with first_seen_ns is new: counted here. (Two
 * programs that reach a brand-new entry before either stamps it count it twice, which makes
 * the bound a little tighter, never looser.) */
static __always_inline struct platoon_thread_stats *create_stored(__u32 tid, struct task_struct *t)
{
	struct platoon_thread_stats *s;

	if (tracked_threads >= (__s64)targ_threads_max) {
		count_untracked(tid);
		return NULL;
	}
	s = bpf_task_storage_get(&thread_store, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (s && !s->first_seen_ns)
		__sync_fetch_and_add(&tracked_threads, 1);
	return s;
}

/* The same in the stats hash. */
static __always_inline struct platoon_thread_stats *create_hashed(__u32 tid)
{
	long err = bpf_map_update_elem(&stats, &tid, &zero_stats, BPF_NOEXIST);

	if (err) {
		if (err != -EEXIST)
			count_untracked(tid);
		return NULL;
	}
	return bpf_map_lookup_elem(&stats, &tid);
}

/* Whether a program of this type keeps entries in task storage. */
static __always_inline bool in_store(bool btf)
{
	return btf && targ_task_storage;
}

static __always_inline struct platoon_thread_stats *
find_entry(bool store, __u32 tid, struct task_struct *t)
{
	return store ? bpf_task_storage_get(&thread_store, t, 0, 0) : bpf_map_lookup_elem(&stats, &tid);
}

/* The entry of thread `t` (tid), created zeroed when missing and `create`. `store`: in task
 * storage, which needs a BTF task pointer (tp_btf arguments, bpf_get_current_task_btf); it is
 * btf && targ_task_storage, a constant the verifier resolves. A task that is already exiting
 * is never given a new entry: user space forgets an exited thread's entry once it has
 * reported it, and the dying task's last switch-out must not bring it back. */
static __always_inline struct platoon_thread_stats *
thread_stats(bool store, __u32 tid, __u32 tgid, struct task_struct *t, __u64 now, bool create)
{
	struct platoon_thread_stats *s = find_entry(store, tid, t);

	if (s || !create)
		return s;
	if (BPF_CORE_READ(t, flags) & PF_EXITING)
		return NULL;
	s = store ? create_stored(tid, t) : create_hashed(tid);
	if (!s)
		return find_entry(store, tid, t);   /* created by another CPU meanwhile, or none */
	if (!s->first_seen_ns) {
		s->tid = tid;
		s->pid = tgid;
		s->first_seen_ns = now;
		s->last_seen_ns = now;
		read_comm(s->comm, t);
	}
	return s;
}

/* Records that the thread entered `state` (enum platoon_request_state) at `now`, in its entry's
 * state log, while requests are traced (a load-time constant otherwise drops the call). */
static __always_inline void log_state(struct platoon_thread_stats *s, __u64 now, __u32 state)
{
	if (!targ_requests)
		return;
	s->state_log[s->state_log_next & (PLATOON_STATE_LOG - 1)] = now << 2 | state;
	s->state_log_next++;
}

/* The calling thread's task, in the form thread_stats wants for hooks without task arguments
 * (epoll tracepoints, USDT): BTF-typed when entries are in task storage. */
static __always_inline struct task_struct *current_task_for_stats(void)
{
	if (targ_task_storage)
		return bpf_get_current_task_btf();
	return (struct task_struct *)bpf_get_current_task();
}

/* The calling thread's entry, for hooks that run in the thread they book on (USDT). */
static __always_inline struct platoon_thread_stats *current_stats(bool create, __u64 now)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if (!is_target(tgid))
		return NULL;
	return thread_stats(targ_task_storage, (__u32)id, tgid, current_task_for_stats(), now, create);
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
