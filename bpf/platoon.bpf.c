// SPDX-License-Identifier: GPL-2.0
/* platoon's kernel side: per-thread scheduler, epoll and runtime aggregates for the target
 * processes, plus (when recording) compact event records in a ring buffer.
 *
 * Every hook exists twice, as tp_btf (direct BTF loads, cheapest) and raw_tp (CO-RE probe
 * reads, for kernels where tracing programs cannot attach); user space loads one set. The
 * handlers are __always_inline with a constant `btf` argument so each entry point compiles to
 * the accesses its program type allows.
 *
 * Cost discipline: the first thing every scheduler hook does is test the task's tgid against
 * the target bitmap and leave if it is not there; everything else (clock, CPU id, stats entry) happens
 * only for target threads. One stats lookup per task per event.
 *
 * One object, one skeleton: the headers below hold its parts in the order their programs
 * appear in the skeleton, and are included nowhere else. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>

#include "bpf/platoon.h"
#include "bpf/bits.bpf.h"
#include "bpf/core_fixes.bpf.h"

#define TASK_RUNNING 0
#define PF_EXITING 0x00000004

char LICENSE[] SEC("license") = "GPL";

/* Knobs, maps, the target set, thread entries: what every hook uses. */
#include "bpf/maps.bpf.h"
#include "bpf/targets.bpf.h"
#include "bpf/thread_stats.bpf.h"

/* The hooks, each family in its own file. */
#include "bpf/sched.bpf.h"
#include "bpf/process.bpf.h"
#include "bpf/epoll.bpf.h"
#include "bpf/runtime_probes.bpf.h"
#include "bpf/requests.bpf.h"
#include "bpf/seed.bpf.h"
