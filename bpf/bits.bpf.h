/* Histogram slot helpers for the kernel programs. */
#ifndef PLATOON_BPF_BITS_BPF_H
#define PLATOON_BPF_BITS_BPF_H

/* floor(log2(v)) for v > 0, 0 for v == 0; branch-light so the verifier sees a bounded result. */
static __always_inline __u32 log2_u32(__u32 v)
{
	__u32 r, shift;

	r = (v > 0xFFFF) << 4; v >>= r;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 hi = v >> 32;

	return hi ? log2_u32(hi) + 32 : log2_u32((__u32)v);
}

/* Slot of a linear histogram whose last slot collects everything >= slots - 1. The empty asm
 * hides the value from the optimiser so the bounds check that follows survives into the
 * bytecode where the verifier needs it (clang otherwise folds it into a 32-bit truncation the
 * verifier cannot see through). */
static __always_inline __u32 linear_slot(__s64 v, __u32 slots)
{
	__u64 slot = v <= 0 ? 0 : (__u64)v;

	asm volatile("" : "+r"(slot));
	if (slot >= slots)
		slot = slots - 1;
	return slot;
}

/* ++hist[slot] with a bounds check the verifier can follow. */
#define HIST_INC(hist, slot, nslots)                      \
	do {                                              \
		__u32 __s = (slot);                       \
		asm volatile("" : "+r"(__s));             \
		if (__s < (nslots))                       \
			(hist)[__s]++;                    \
	} while (0)

#endif /* PLATOON_BPF_BITS_BPF_H */
