/* The knobs user space sets before load (targ_*), the maps, and the helpers that touch only
 * one map: drop counters and the ring buffer's record header (bpf/stage.bpf.h writes records). */
#ifndef PLATOON_BPF_MAPS_BPF_H
#define PLATOON_BPF_MAPS_BPF_H

#include "bpf/platoon.h"

/* Set by user space before load. */
const volatile bool targ_events = false;        /* write ring-buffer records */
const volatile bool targ_comm_set = false;      /* match new processes by comm */
const volatile char targ_comm[PLATOON_COMM_LEN] = {};
/* The reader is woken only once this much is unread: it drains on its own timer otherwise, so
 * that a busy target does not pay for a reader wakeup (irq_work + epoll) on every record. */
const volatile __u64 targ_wakeup_bytes = 1;
/* New processes forked by a target become targets (perf's inherit), at sched_process_fork. */
const volatile bool targ_follow_forks = false;
/* Whole-machine mode (top/record --all): every process is a target but platoon itself
 * (targ_self, its tgid: a recorder watching its own ring-buffer polls would feed itself). The
 * target set and its bitmap stay empty; only the stats and pairs maps bound what is kept. */
const volatile bool targ_all = false;
const volatile __u32 targ_self = 0;
/* sched_switch passes prev_state as its 4th argument since 5.18; before that the programs may
 * not read ctx[3] at all (tp_btf rejects the access, raw_tp the attach), so the state is read
 * from the task instead. User space sets this from the tracepoint's BTF prototype. */
const volatile bool targ_switch_state_arg = true;
/* Per-CPU switch-in slots kept per thread (at most PLATOON_MAX_CPUS); switch-ins on CPUs at or
 * above it are counted in cpu_overflow. Lowered only by tests, to exercise that count on a
 * machine with few CPUs. */
const volatile __u32 targ_cpu_slots = PLATOON_MAX_CPUS;
/* Where a thread's time blocked in epoll starts: at its voluntary switch-out inside one of the
 * epoll_wait syscalls (its syscall number is in its saved registers; tp_btf with
 * bpf_task_pt_regs, 5.15), so the syscall enter tracepoints are not attached at all. False:
 * at sys_enter_epoll_*, as before (raw_tp, older kernels). */
const volatile bool targ_epoll_at_switch = false;
/* Where thread entries live (bpf/thread_stats.bpf.h): true, in task-local storage (thread_store,
 * 5.11, tp_btf programs only: the hooks need BTF task pointers); false, in the `stats` hash.
 * targ_threads_max bounds the entries either way (the hash by its size). */
const volatile bool targ_task_storage = false;
const volatile __u32 targ_threads_max = PLATOON_MAX_THREADS;
/* The request programs are loaded (bpf/requests.bpf.h): the scheduler hooks keep each thread
 * entry's state log, which those programs read. */
const volatile bool targ_requests = false;

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

/* With targ_task_storage: each tracked thread's entry hangs off its task_struct, found by a
 * pointer test in the task's storage cache instead of a hash of its tid (what that saves:
 * docs/kernel.md). User space reads these through the dump_threads iterator.
 * Without it user space turns this map into a one-entry hash that nothing reaches. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct platoon_thread_stats);
} thread_store SEC(".maps");

/* With targ_task_storage: an exited thread's final entry, copied at sched_process_exit (the
 * task's storage goes with the task), kept until user space has reported it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PLATOON_MAX_THREADS);   /* user space: targ_threads_max */
	__type(key, __u32);                         /* tid */
	__type(value, struct platoon_thread_stats);
} exited_stats SEC(".maps");

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

static __always_inline void count_drops(__u32 kind, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&drops, &kind);

	if (c)
		*c += n;    /* per-CPU slot: no atomics needed */
}

static __always_inline void count_drop(__u32 kind)
{
	count_drops(kind, 1);
}

static __always_inline void count_untracked(__u32 tid)
{
	__u8 one = 1;

	if (bpf_map_update_elem(&untracked, &tid, &one, BPF_NOEXIST) == 0)
		count_drop(PLATOON_DROP_THREADS);
}

static __always_inline void fill_header(struct platoon_event_header *h, __u64 now, __u16 type,
					__u32 cpu, __u32 tid)
{
	h->ts_ns = now;
	h->type = type;
	h->cpu = cpu;
	h->tid = tid;
}

#endif
