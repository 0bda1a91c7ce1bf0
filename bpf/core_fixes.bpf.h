/* CO-RE shims for task_struct fields that were renamed or moved across kernel versions. Each
 * helper compiles both layouts; libbpf keeps the branch that exists on the running kernel. */
#ifndef PLATOON_BPF_CORE_FIXES_BPF_H
#define PLATOON_BPF_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/* Before 5.14 (commit 2f064a59a1) the task state was `volatile long state`. */
struct task_struct___pre_5_14 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre_5_14 *)t, state);
}

/* The same, as a plain load where the program has BTF pointers (tp_btf, iterators). */
static __always_inline __u32 task_state_fast(bool btf, struct task_struct *t)
{
	if (btf && bpf_core_field_exists(t->__state))
		return t->__state;
	return task_state(t);
}

/* The CPU a task is on: thread_info.cpu with THREAD_INFO_IN_TASK since 5.16 (and before 5.7),
 * task->cpu in between and on architectures without it. */
struct task_struct___with_cpu {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_cpu(struct task_struct *t)
{
	if (bpf_core_field_exists(t->thread_info.cpu))
		return BPF_CORE_READ(t, thread_info.cpu);
	return BPF_CORE_READ((struct task_struct___with_cpu *)t, cpu);
}

/* The same, as a plain load where the program has BTF pointers. */
static __always_inline __u32 task_cpu_fast(bool btf, struct task_struct *t)
{
	if (btf && bpf_core_field_exists(t->thread_info.cpu))
		return t->thread_info.cpu;
	return task_cpu(t);
}

#endif /* PLATOON_BPF_CORE_FIXES_BPF_H */
