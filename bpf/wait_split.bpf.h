/* Why a thread waited: a wait that starts while the thread's group is throttled by
 * its CPU quota, on a CPU the hypervisor steals from or that serves interrupts, or on a CPU
 * that was idle when the thread was woken (the wait is then the idle exit, not another task).
 * Read from the run queue's own clocks at the two ends of each wait (the steal and irq time the
 * scheduler subtracts from task time at every clock update), so the split costs a few loads
 * per wait and no extra hook.
 *
 * Needs: steal, CONFIG_PARAVIRT_TIME_ACCOUNTING (rq->prev_steal_time_rq); interrupts,
 * CONFIG_IRQ_TIME_ACCOUNTING (rq->prev_irq_time): without it the kernel only samples irq time
 * at the tick and the irq part stays 0 (the per-CPU irq share from /proc/stat still shows).
 * A wait whose thread changed CPU while queued gets no steal or irq share (two CPUs' clocks do
 * not subtract). */
#ifndef PLATOON_BPF_WAIT_SPLIT_BPF_H
#define PLATOON_BPF_WAIT_SPLIT_BPF_H

#include "bpf/platoon.h"

/* The run queue a task is queued on (its group's cfs_rq on that CPU points back to it). The
 * per-CPU counters themselves (kernel_cpustat, runqueues) are not reachable as ksyms on kernels
 * without CONFIG_KALLSYMS_ALL, so everything is read through the task. */
static __always_inline struct rq *rq_of(bool btf, struct task_struct *p)
{
	struct cfs_rq *cfs;

	if (!bpf_core_field_exists(p->se.cfs_rq) || !bpf_core_field_exists(((struct cfs_rq *)0)->rq))
		return NULL;
	if (!btf)
		return BPF_CORE_READ(p, se.cfs_rq, rq);
	cfs = p->se.cfs_rq;     /* tp_btf: plain loads through trusted pointers, no helper call */
	return cfs ? cfs->rq : NULL;
}

/* With CONFIG_IRQ_TIME_ACCOUNTING the run queue keeps the CPU's irq time (a field this
 * kernel's vmlinux.h may lack, hence the flavour). */
struct rq___irqtime {
	u64 prev_irq_time;
} __attribute__((preserve_access_index));

struct cpu_wait_clock {
	__u64 steal;
	__u64 irq;      /* hard + soft; 0 without CONFIG_IRQ_TIME_ACCOUNTING */
};

/* The steal clock as the scheduler books it into the run queue at every clock update
 * (CONFIG_PARAVIRT_TIME_ACCOUNTING), and the irq time likewise. */
static __always_inline bool read_cpu_wait_clock(bool btf, struct rq *rq, struct cpu_wait_clock *c)
{
	struct rq___irqtime *irq = (struct rq___irqtime *)rq;

	if (!rq)
		return false;
	c->steal = 0;
	c->irq = 0;
	if (bpf_core_field_exists(rq->prev_steal_time_rq))
		c->steal = btf ? rq->prev_steal_time_rq : BPF_CORE_READ(rq, prev_steal_time_rq);
	if (bpf_core_field_exists(irq->prev_irq_time))
		c->irq = btf ? irq->prev_irq_time : BPF_CORE_READ(irq, prev_irq_time);
	return true;
}

/* The group is throttled: its cfs_rq (or an ancestor's) ran out of quota. Read as the thread
 * leaves the CPU; under the task-based throttle (6.18) this is the switch-out that parks it,
 * under the older group throttle the preemption that follows the throttle. */
static __always_inline bool group_throttled(bool btf, struct task_struct *p)
{
	struct cfs_rq *cfs;

	if (!bpf_core_field_exists(p->se.cfs_rq) ||
	    !bpf_core_field_exists(((struct cfs_rq *)0)->throttle_count))
		return false;
	if (!btf)
		return BPF_CORE_READ(p, se.cfs_rq, throttle_count) > 0;
	cfs = p->se.cfs_rq;
	return cfs && cfs->throttle_count > 0;
}

/* The CPU is running its idle task, so a thread woken onto it waits for nothing but the idle
 * exit (and, in a VM, for the hypervisor to run the vCPU again). */
static __always_inline bool cpu_idle_now(bool btf, struct rq *rq)
{
	if (!rq)
		return false;
	if (btf)
		return rq->curr == rq->idle;
	return BPF_CORE_READ(rq, curr) == BPF_CORE_READ(rq, idle);
}

/* A wait starts on `cpu`; flags say what is already known about it. */
static __always_inline void wait_split_start(bool btf, struct platoon_thread_stats *s, struct rq *rq, __u32 cpu,
					     __u32 flags)
{
	struct cpu_wait_clock c;

	s->wait_flags = flags;
	s->wait_cpu = cpu;
	if (read_cpu_wait_clock(btf, rq, &c)) {
		s->wait_steal_start = c.steal;
		s->wait_irq_start = c.irq;
		s->wait_flags |= PLATOON_WAIT_CLOCKED;
	}
}

/* The wait of `delta` ns ends on `cpu`: book its parts. Throttled and idle-exit waits are
 * booked whole; otherwise steal first, then interrupts, each at most what is left. */
static __always_inline void wait_split_end(bool btf, struct platoon_thread_stats *s, struct rq *rq, __u32 cpu,
					   __u64 delta)
{
	struct cpu_wait_clock c;
	__u64 part;

	if (s->wait_flags & PLATOON_WAIT_THROTTLED) {
		s->wait_throttled_ns += delta;
		return;
	}
	if (s->wait_flags & PLATOON_WAIT_IDLE_CPU) {
		s->wait_idle_exit_ns += delta;
		return;
	}
	if (!(s->wait_flags & PLATOON_WAIT_CLOCKED) || s->wait_cpu != cpu || !read_cpu_wait_clock(btf, rq, &c))
		return;
	part = c.steal - s->wait_steal_start;
	if (part > delta)
		part = delta;
	s->wait_steal_ns += part;
	delta -= part;
	part = c.irq - s->wait_irq_start;
	if (part > delta)
		part = delta;
	s->wait_irq_ns += part;
}

#endif
