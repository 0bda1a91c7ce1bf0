/* Structs shared by the kernel programs (platoon.bpf.c) and user space (collector, trace file).
 * Plain C with fixed-width types: the BPF side sees them through vmlinux.h's __u32/__u64, user
 * space through <linux/types.h>. Every layout here is part of the trace file format (its event
 * records are those of version 1): change a struct only together with kTraceMajorVersion in
 * tui/trace/trace_format.hpp, whose static_asserts hold the sizes. */
#ifndef PLATOON_BPF_PLATOON_H
#define PLATOON_BPF_PLATOON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "runtime/drain_counters.h"

#define PLATOON_COMM_LEN 16
#define PLATOON_MAX_CPUS 64      /* per-CPU switch-in counters; CPUs beyond are counted in cpu_overflow */
#define PLATOON_RUNQ_SLOTS 40    /* log2 histogram of run-queue latency in ns: slot i = [2^i, 2^(i+1)) */
#define PLATOON_BATCH_SLOTS 65   /* linear histogram 0..63, slot 64 = 64 or more */
#define PLATOON_STATE_LOG 32      /* state changes a thread entry keeps while requests are traced */
#define PLATOON_MAX_THREADS 16384 /* stats map entries; a thread that finds it full is counted, not tracked */
#define PLATOON_MAX_PAIRS 16384   /* preempted-by / woken-by pairs */
#define PLATOON_MAX_TARGETS 1024  /* target processes (tgids) */

/* Why a count was lost: index into the per-CPU `drops` array. */
enum platoon_drop {
	PLATOON_DROP_RINGBUF = 0,   /* ring buffer full: an event record was not written */
	PLATOON_DROP_THREADS = 1,   /* stats map full: a target thread is not tracked */
	PLATOON_DROP_PAIRS = 2,     /* pair map full: a preemptor or waker was not recorded */
	PLATOON_DROP_TARGETS = 3,   /* target map full: a matching process was not added */
	PLATOON_DROP_REQUESTS = 4,  /* request ring full: a completed request was not written */
	PLATOON_DROP_KINDS = 5,
};

/* Per-thread aggregates, one entry per target thread in the `stats` hash (key: tid).
 * Everything is cumulative from the moment the thread was first seen by the programs. */
struct platoon_thread_stats {
	__u32 tid;
	__u32 pid;                      /* tgid */
	char comm[PLATOON_COMM_LEN];    /* thread name, refreshed at each switch-in */
	__u64 first_seen_ns;            /* CLOCK_BOOTTIME (bpf_ktime_get_boot_ns) */
	__u64 last_seen_ns;
	__u32 exited;                   /* set by sched_process_exit; user space deletes the entry once read */
	__u32 on_cpu;                   /* 1 while running: run_start_ns is valid */
	__u32 runnable;                 /* 1 while queued: wait_start_ns is valid */
	__u32 last_cpu;
	/* scheduler */
	__u64 run_start_ns;             /* in-flight state: lets a reader add the unfinished interval */
	__u64 wait_start_ns;
	__u64 run_ns;                   /* on-CPU time, switch-in to switch-out */
	__u64 wait_ns;                  /* runnable but not running: wakeup or preemption to switch-in */
	__u64 switches_voluntary;       /* switched out blocking (what /proc status calls voluntary) */
	__u64 switches_involuntary;     /* switched out while still runnable */
	__u64 switch_ins;
	__u64 migrations;               /* sched_migrate_task with orig_cpu != dest_cpu */
	__u64 wakeups;                  /* sched_wakeup + sched_wakeup_new */
	__u64 runq_max_ns;
	__u64 runq_hist[PLATOON_RUNQ_SLOTS];
	__u64 cpu_switch_ins[PLATOON_MAX_CPUS];
	__u64 cpu_overflow;             /* switch-ins on CPUs >= PLATOON_MAX_CPUS */
	/* epoll_wait / epoll_pwait / epoll_pwait2 */
	__u64 epoll_enter_ns;           /* in-flight */
	__u64 io_cycles;                /* calls that returned >= 0 */
	__u64 io_events;                /* sum of returned ready events */
	__u64 io_blocked_ns;            /* time inside the calls */
	__u64 io_events_hist[PLATOON_BATCH_SLOTS];
	/* runtime USDT probes (platoon-runtime targets only): drains and steals as the runtime
	 * lists them, booked per probe hit (bpf/runtime_probes.bpf.h) */
#define PLATOON_KERNEL_COUNTER(name) __u64 name;
#define PLATOON_KERNEL_HIST(name, slots) __u64 name[slots];
	PLATOON_DRAIN_COUNTERS(PLATOON_KERNEL_COUNTER, PLATOON_KERNEL_HIST)
#undef PLATOON_KERNEL_COUNTER
#undef PLATOON_KERNEL_HIST
	__u64 polls;                    /* runtime poll probe: calls (not attached by the collector: cost) */
	__u64 poll_events;              /* runtime poll probe: events (likewise) */
	/* added after the first layout (appended, nothing reordered): */
	__u32 preemptor_tid;            /* in-flight: who was switched in when this thread was last
	                                 * switched out runnable; its PREEMPTED_BY pair gets the wait */
	__u32 seeded;                   /* 1: entry created by the attach-time task walk */
	/* why it waited (bpf/wait_split.bpf.h); parts of wait_ns, the rest is behind other tasks */
	__u64 wait_throttled_ns;        /* its group was throttled by its CPU quota */
	__u64 wait_steal_ns;            /* its CPU was stolen by the hypervisor */
	__u64 wait_irq_ns;              /* its CPU served hard and soft interrupts */
	__u64 wait_idle_exit_ns;        /* woken onto an idle CPU: the idle exit */
	__u64 wait_steal_start;         /* in-flight: the CPU's counters when the wait began */
	__u64 wait_irq_start;
	__u32 wait_cpu;
	__u32 wait_flags;               /* PLATOON_WAIT_* */
	/* While requests are traced: the thread's last state changes, so that a read can split the
	 * socket wait it ends by what the reader did meanwhile (bpf/requests.bpf.h) from its own
	 * entry, without touching the reader from the CPU where the bytes arrived. A ring: entry
	 * (state_log_next - 1) % PLATOON_STATE_LOG is the newest; 0 is empty. */
	__u64 state_log[PLATOON_STATE_LOG]; /* (ts_ns << 2) | the state entered (platoon_request_state) */
	__u32 state_log_next;
	__u32 state_log_pad;
};

#define PLATOON_WAIT_THROTTLED 1u   /* began as its group was throttled */
#define PLATOON_WAIT_IDLE_CPU 2u    /* began with a wakeup onto an idle CPU */
#define PLATOON_WAIT_CLOCKED 4u     /* wait_steal_start / wait_irq_start are valid */

/* Who ran while a thread waited, and who woke it: `pairs` hash. */
enum platoon_pair_kind {
	PLATOON_PAIR_PREEMPTED_BY = 0,  /* other = the task switched in when tid was switched out runnable */
	PLATOON_PAIR_WOKEN_BY = 1,      /* other = the task running sched_waking/wakeup for tid */
};
struct platoon_pair_key {
	__u32 tid;
	__u32 other;                    /* other task's tid (0 = idle/interrupt context) */
	__u32 kind;                     /* enum platoon_pair_kind */
	__u32 pad;
};
struct platoon_pair_value {
	__u64 count;
	__u64 ns;                       /* PREEMPTED_BY: wait that followed that preemption */
	__u32 other_pid;
	char other_comm[PLATOON_COMM_LEN];
	__u32 pad;
};

/* Ring-buffer records, written only while recording (targ_events). Each starts with the same
 * header; sizes differ per type so the buffer holds as many as it can. Times: CLOCK_BOOTTIME. */
enum platoon_event_type {
	PLATOON_EV_SWITCH = 1,
	PLATOON_EV_WAKING = 2,
	PLATOON_EV_WAKEUP = 3,
	PLATOON_EV_WAKEUP_NEW = 4,
	PLATOON_EV_MIGRATE = 5,
	PLATOON_EV_EXIT = 6,
	PLATOON_EV_EPOLL = 7,          /* one epoll wait call, at its return */
	PLATOON_EV_DRAIN = 8,          /* runtime drain_start */
	PLATOON_EV_STEAL = 9,          /* runtime steal */
	PLATOON_EV_REQUEST = 10,       /* one request on a target's TCP connection, at its end */
};
struct platoon_event_header {
	__u64 ts_ns;
	__u16 type;                     /* enum platoon_event_type */
	__u16 cpu;
	__u32 tid;                      /* the task the event is about (switch: prev) */
};
struct platoon_ev_switch {          /* sched_switch where prev or next is a target */
	struct platoon_event_header h;  /* tid = prev */
	__u32 prev_pid;
	__u32 next_tid;
	__u32 next_pid;
	__u32 prev_state;               /* raw task state; 0 = still runnable (preempted) */
	__s32 prev_prio;
	__s32 next_prio;
	char prev_comm[PLATOON_COMM_LEN];
	char next_comm[PLATOON_COMM_LEN];
};
struct platoon_ev_wake {            /* WAKING, WAKEUP, WAKEUP_NEW of a target thread */
	struct platoon_event_header h;  /* tid = wakee */
	__u32 pid;
	__u32 target_cpu;
	__s32 prio;
	__u32 waker_tid;                /* current task when the event fired */
	char comm[PLATOON_COMM_LEN];
};
struct platoon_ev_migrate {
	struct platoon_event_header h;
	__u32 pid;
	__u32 orig_cpu;
	__u32 dest_cpu;
	__s32 prio;
	char comm[PLATOON_COMM_LEN];
};
struct platoon_ev_exit {
	struct platoon_event_header h;
	__u32 pid;
	__u32 pad;
};
struct platoon_ev_epoll {
	struct platoon_event_header h;
	__s32 nevents;                  /* the call's return value (negative: -errno) */
	__u32 pad;
	__u64 enter_ns;
};
struct platoon_ev_runtime {         /* DRAIN (a = queue depth, b = fibers run) and STEAL (a = victim, b = count) */
	struct platoon_event_header h;
	__s64 carrier;
	__s64 a;
	__s64 b;
};

/* One request on a TCP connection of a target (bpf/requests.bpf.h says how the three moments
 * are found). Server side, on a connection the target accepted: ready = the first bytes of the
 * request became readable, read = a target thread first read them, written = it first wrote
 * the response. Client side, on a connection the target made: sent = it wrote, ready = the
 * reply became readable, read = it read it. */
enum platoon_request_side {
	PLATOON_REQ_SERVER = 0,
	PLATOON_REQ_CLIENT = 1,
};
/* The reader's states that make up a socket wait, in this order in state_ns. */
enum platoon_request_state {
	PLATOON_REQ_RUNNABLE = 0,       /* waiting for a CPU (its quota's throttling excluded) */
	PLATOON_REQ_THROTTLED = 1,      /* waiting while its cgroup was throttled */
	PLATOON_REQ_RUNNING = 2,        /* on a CPU, doing other work */
	PLATOON_REQ_BLOCKED = 3,        /* asleep until woken */
	PLATOON_REQ_STATES = 4,
};
#define PLATOON_REQ_PARTIAL 1u      /* the connection was claimed mid-request (it predates the attach) */
#define PLATOON_REQ_UNATTRIBUTED 2u /* not read by the expected reader: state_ns is all 0 */
#define PLATOON_REQ_OVERLAPPED 4u   /* requests overlapped on the connection (pipelining, HTTP/2) */
struct platoon_ev_request {
	struct platoon_event_header h;  /* ts = its end (server: written, client: read), tid = the reader;
	                                 * it started wait_ns + service_ns before */
	__u32 pid;                      /* the reader's tgid */
	__u16 side;                     /* enum platoon_request_side */
	__u16 flags;                    /* PLATOON_REQ_* */
	__u16 family;                   /* AF_INET or AF_INET6 */
	__u16 local_port;
	__u16 remote_port;
	__u16 pad;
	__u8 remote_addr[16];           /* network order; IPv4 in the first four bytes */
	__u64 conn;                     /* the socket's cookie: one per connection */
	__u64 wait_ns;                  /* socket wait: ready to read */
	__u64 service_ns;               /* server: read to written; client: the backend time, sent to ready */
	__u64 state_ns[PLATOON_REQ_STATES]; /* the socket wait by the reader's state */
};

/* Each CPU stages its records and hands them to the ring buffer a batch at a time: one
 * reserve/commit under the ring's lock per batch rather than per record (measured: most of a
 * recorded event's cost was that pair, ~100 ns here, docs/benchmarks.md). A ring record is
 * therefore one or more event records back to back, each sized by its type. */
#define PLATOON_STAGE_BYTES 4096        /* a power of two */
#define PLATOON_STAGE_MAX_AGE_NS 10000000ull  /* a CPU's oldest staged record waits at most this long
					 * while the CPU is busy; user space flushes quiet CPUs */

#ifdef __cplusplus
#define PLATOON_CONSTEXPR constexpr
#else
#define PLATOON_CONSTEXPR
#endif

/* Size of one event record of each type (0: unknown type, the record is invalid). */
static inline PLATOON_CONSTEXPR __u32 platoon_event_size(__u16 type)
{
	switch (type) {
	case PLATOON_EV_SWITCH: return sizeof(struct platoon_ev_switch);
	case PLATOON_EV_WAKING:
	case PLATOON_EV_WAKEUP:
	case PLATOON_EV_WAKEUP_NEW: return sizeof(struct platoon_ev_wake);
	case PLATOON_EV_MIGRATE: return sizeof(struct platoon_ev_migrate);
	case PLATOON_EV_EXIT: return sizeof(struct platoon_ev_exit);
	case PLATOON_EV_EPOLL: return sizeof(struct platoon_ev_epoll);
	case PLATOON_EV_DRAIN:
	case PLATOON_EV_STEAL: return sizeof(struct platoon_ev_runtime);
	case PLATOON_EV_REQUEST: return sizeof(struct platoon_ev_request);
	default: return 0;
	}
}

#endif /* PLATOON_BPF_PLATOON_H */
