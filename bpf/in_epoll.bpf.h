/* Whether a task going to sleep is inside an epoll_wait call: read at its voluntary switch-out
 * from the syscall number in its saved user registers (see epoll.bpf.h, targ_epoll_at_switch). */
#ifndef PLATOON_BPF_IN_EPOLL_BPF_H
#define PLATOON_BPF_IN_EPOLL_BPF_H

/* The epoll_wait syscall numbers of the ABI the programs are built for (64-bit tasks; a
 * 32-bit compat task's blocks are not seen). */
#if defined(__TARGET_ARCH_x86)
#define PLATOON_SYSCALL_NR(regs) ((regs)->orig_ax)
#define PLATOON_NR_IS_EPOLL(nr) ((nr) == 232 || (nr) == 281 || (nr) == 441)
#elif defined(__TARGET_ARCH_arm64)
#define PLATOON_SYSCALL_NR(regs) ((regs)->syscallno)
#define PLATOON_NR_IS_EPOLL(nr) ((nr) == 22 || (nr) == 441)
#endif

/* True when `t`, switching out voluntarily, is inside an epoll_wait call. tp_btf only: the
 * helper wants a BTF task pointer (raw_tp's arguments are plain numbers), and its result is
 * a BTF pointer, so the load is a direct one. */
static __always_inline bool blocked_in_epoll(struct task_struct *t)
{
#ifdef PLATOON_SYSCALL_NR
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	long nr = PLATOON_SYSCALL_NR(regs);

	return PLATOON_NR_IS_EPOLL(nr);
#else
	return false;
#endif
}

#endif
