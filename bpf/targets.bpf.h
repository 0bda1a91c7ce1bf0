/* Which processes are watched: the bitmap every hook tests first, and the only code that adds
 * or drops a target. */
#ifndef PLATOON_BPF_TARGETS_BPF_H
#define PLATOON_BPF_TARGETS_BPF_H

#include "bpf/maps.bpf.h"

/* The hot-path target test. `targets` (maps.bpf.h) is the bounded set user space fills and lists;
 * this bitmap over all possible tgids (pid_max <= PID_MAX_LIMIT = 2^22 on 64-bit: 512 KiB of
 * .bss) mirrors it so that the test every sched_switch makes for prev and next is one load
 * and a shift, not two hash lookups (measured: ~35 ns each here; the filter runs on every
 * switch of every process). Written only through add_target()/drop_target() below and the
 * collector's Impl::target(), which keep both in step. */
#define TARGET_BITS_WORDS ((1u << 22) / 64)
__u64 target_bits[TARGET_BITS_WORDS];

/* The word of a tgid's bit: masked rather than range-checked, so the verifier sees the bound
 * directly (a tgid is below PID_MAX_LIMIT anyway). */
static __always_inline __u32 target_word(__u32 tgid)
{
	return (tgid >> 6) & (TARGET_BITS_WORDS - 1);
}

static __always_inline bool is_target(__u32 tgid)
{
	if (targ_all)       /* a load-time constant: the verifier drops the branch not taken */
		return tgid && tgid != targ_self;
	return tgid && ((target_bits[target_word(tgid)] >> (tgid & 63)) & 1);
}

/* Bits are set and cleared with atomic adds (BPF_XADD, every kernel) rather than atomic or/and
 * (BPF_ATOMIC, 5.12+): a program holding those does not load on older kernels at all. An add
 * is a correct set/clear only if the bit is known to be clear/set, so the `targets` hash is the
 * arbiter: only the caller whose insert (BPF_NOEXIST) or delete succeeds touches the bit, and
 * the collector's Impl::target() follows the same rule from user space. */
static __always_inline void add_target(__u32 tgid)
{
	__u32 word = target_word(tgid);
	__u8 one = 1;
	long err;

	if (targ_all || !tgid || tgid >= TARGET_BITS_WORDS * 64)
		return;     /* in whole-machine mode everything already is a target */
	err = bpf_map_update_elem(&targets, &tgid, &one, BPF_NOEXIST);
	if (err == -EEXIST)
		return;     /* already a target: its bit is set */
	if (err) {
		count_drop(PLATOON_DROP_TARGETS);
		return;
	}
	__sync_fetch_and_add(&target_bits[word], 1ull << (tgid & 63));
}

static __always_inline void drop_target(__u32 tgid)
{
	__u32 word = target_word(tgid);

	if (!tgid || tgid >= TARGET_BITS_WORDS * 64)
		return;
	if (bpf_map_delete_elem(&targets, &tgid))
		return;     /* not a target (or another CPU dropped it first) */
	__sync_fetch_and_add(&target_bits[word], -(1ull << (tgid & 63)));
}

#endif
