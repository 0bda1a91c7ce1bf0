/* Requests on the targets' TCP connections, from the socket tracepoints (6.3+; tp_btf only,
 * for socket-local storage): sock:sk_data_ready (bytes became readable), sock:sock_recv_length
 * (a thread read), sock:sock_send_length (a thread wrote) and sock:inet_sock_set_state (which
 * connections are the targets', and on which side); a write's start from tcp:tcp_sendmsg_locked
 * where the kernel has it.
 *
 * Each connection of a target carries its state in socket storage, freed with the socket, so
 * a socket that is not a target's costs one pointer test and a reused address cannot inherit
 * an old request. The request moments, per side:
 *   server (accepted on a port a target listens on): ready = the first data_ready with bytes
 *     after the previous response began; read = a target thread's first read after it;
 *     written = its first write after that, which ends the request. Bytes that arrive before
 *     the response belong to the same request.
 *   client (a target connected): sent = a write while no request is open; ready = the next
 *     data_ready with bytes; read = the read after it, which ends the request.
 * The socket wait (ready to read) is split at the read by what the expected reader (the thread
 * that read the connection last) did meanwhile: running, runnable, throttled by its quota, or
 * blocked, from the state log the scheduler hooks keep in its entry (bpf/platoon.h). The read
 * runs in the reader, so the split touches only its own entry; data_ready, which runs on the
 * sender's CPU, touches nothing of the reader (a cache line another CPU wrote costs ~0.2 us on
 * this project's VMs, and the lookup of another task ~0.25 us). Another thread's read, or a
 * wait longer than the log reaches back, leaves the request unattributed rather than guessed.
 *
 * The tracepoints' own rules, respected below: sock_recv_length fires for every receive
 * through sock_recvmsg, also EAGAIN (ret < 0), MSG_PEEK and MSG_ERRQUEUE, which do not read;
 * sk_data_ready fires per in-order segment, also for a FIN without bytes and on a listener per
 * handshake, in the sender's softirq on loopback (so `current` says nothing of the owner). */
#ifndef PLATOON_BPF_REQUESTS_BPF_H
#define PLATOON_BPF_REQUESTS_BPF_H

#include "bpf/maps.bpf.h"
#include "bpf/targets.bpf.h"
#include "bpf/thread_stats.bpf.h"

#include <bpf/bpf_endian.h>

#define REQ_AF_INET 2
#define REQ_AF_INET6 10
#define REQ_MSG_PEEK 0x2
#define REQ_MSG_ERRQUEUE 0x2000

/* Where a connection's current request stands. */
enum req_phase {
	REQ_IDLE = 0,       /* no request open: server, waiting for one; client, nothing sent */
	REQ_WAITING = 1,    /* server: bytes ready, not read yet */
	REQ_SERVING = 2,    /* server: read, response not begun */
	REQ_SENT = 3,       /* client: written, no reply yet */
	REQ_READY = 4,      /* client: reply ready, not read yet */
};

/* A connection's state. What data_ready reads and writes comes first, in the storage's first
 * cache line (its data starts 8 bytes into a line): the rest is the reader's. */
struct platoon_sock {
	__u8 side;          /* enum platoon_request_side */
	__u8 phase;         /* enum req_phase */
	__u16 flags;        /* PARTIAL and UNATTRIBUTED for the request open now; OVERLAPPED is sticky */
	__u32 reader;       /* tid of the thread that read last; 0: none yet */
	__u64 start_ns;     /* server: ready; client: sent */
	__u64 ready_ns;     /* client: the reply's ready */
	__u64 read_ns;      /* server: the first read */
	__u32 pid;          /* the target's tgid */
	__u32 pad;
	__u64 split[PLATOON_REQ_STATES];  /* the socket wait by state, taken at the read */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct platoon_sock);
} sock_store SEC(".maps");

/* Ports a target listens on (host order) and its tgid: learned at each listen() and seeded
 * by user space at attach for the sockets that were listening already (tgid 0 in whole-machine
 * mode: a listener of any process). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u16);
	__type(value, __u32);
} listen_ports SEC(".maps");

/* Completed requests: their own ring, drained by user space with or without recording. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);                  /* user space sets the real size */
} request_ring SEC(".maps");

static __always_inline bool is_tcp_stream(const struct sock *sk)
{
	__u16 family = sk->__sk_common.skc_family;

	return sk->sk_protocol == IPPROTO_TCP && sk->sk_type == SOCK_STREAM &&
	       (family == REQ_AF_INET || family == REQ_AF_INET6);
}

/* Bytes the reader could read now, as tcp_inq counts them (a FIN takes one sequence number). */
static __always_inline __u32 readable_bytes(const struct sock *sk)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	__u32 n;

	if (!tp)
		return 0;
	n = tp->rcv_nxt - tp->copied_seq;
	if (n && (sk->__sk_common.skc_flags & (1ul << SOCK_DONE)))
		n--;
	return n;
}

/* The calling thread (entry s) is on its CPU. Its entry may say it is asleep: on some kernels
 * no tracepoint fires while certain tasks are current (seen on a 6.18 VM guest, perf missing
 * the same events), so a thread woken from an interrupt on such a task and switched in after
 * it shows neither, and sched.bpf.h keeps it blocked until its next switch-out. A socket wait
 * it spends running meanwhile would be booked blocked, all of it. Set it running from now:
 * what it ran before is lost, as its switch-in was. (An entry still marked queued is
 * sched.bpf.h's to settle at the switch-out: see on_switch.) */
static __always_inline void running_now(struct platoon_thread_stats *s, __u64 now)
{
	if (!s->exited && !s->on_cpu && !s->runnable) {
		s->on_cpu = 1;
		s->run_start_ns = now;
		log_state(s, now, PLATOON_REQ_RUNNING);
	}
}

/* The socket wait [ready, now] by the states in the reader's log (entry s), walked back from
 * now: each state lasted from its entry to the next one's. Taken at the read, when the reader
 * is the current thread. Not the expected reader, a partial request, or a log that does not
 * reach back to ready: unattributed. The parts sum to the wait. */
static __always_inline void split_wait(struct platoon_sock *ps, const struct platoon_thread_stats *s,
				       __u32 tid, __u64 ready, __u64 now)
{
	__u64 split[PLATOON_REQ_STATES] = {}, end = now, e, ts;
	__u32 newest = s ? s->state_log_next - 1 : 0;
	int i;

	/* (an exited entry: the tid was reused before user space removed the old thread's) */
	if (!s || s->exited || ps->reader != tid || (ps->flags & PLATOON_REQ_PARTIAL))
		goto unattributed;
	for (i = 0; i < PLATOON_STATE_LOG; i++) {
		e = s->state_log[(newest - i) & (PLATOON_STATE_LOG - 1)];
		if (!e)
			break;
		ts = e >> 2;
		if (ts <= ready) {
			split[e & 3] += end - ready;
			__builtin_memcpy(ps->split, split, sizeof(split));
			return;
		}
		if (ts < end) {
			split[e & 3] += end - ts;
			end = ts;
		}
	}
unattributed:
	ps->flags |= PLATOON_REQ_UNATTRIBUTED;
}

/* Writes the request that just ended (a full ring is counted) and clears what was its own. */
static __always_inline void emit_request(const struct sock *sk, struct platoon_sock *ps, __u32 tid,
					 __u64 now, __u64 wait, __u64 service)
{
	struct platoon_ev_request *e = bpf_ringbuf_reserve(&request_ring, sizeof(*e), 0);
	__u16 family = sk->__sk_common.skc_family;

	if (!e) {
		count_drop(PLATOON_DROP_REQUESTS);
	} else {
		__builtin_memset(e, 0, sizeof(*e));
		fill_header(&e->h, now, PLATOON_EV_REQUEST, bpf_get_smp_processor_id(), tid);
		e->pid = ps->pid;
		e->side = ps->side;
		e->flags = ps->flags;
		e->family = family;
		e->local_port = sk->__sk_common.skc_num;
		e->remote_port = bpf_ntohs(sk->__sk_common.skc_dport);
		if (family == REQ_AF_INET)
			__builtin_memcpy(e->remote_addr, &sk->__sk_common.skc_daddr, 4);
		else
			__builtin_memcpy(e->remote_addr, &sk->__sk_common.skc_v6_daddr, 16);
		e->conn = bpf_get_socket_cookie((void *)sk);
		e->wait_ns = wait;
		e->service_ns = service;
		if (!(ps->flags & PLATOON_REQ_UNATTRIBUTED))
			__builtin_memcpy(e->state_ns, ps->split, sizeof(e->state_ns));
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	ps->flags &= ~(PLATOON_REQ_PARTIAL | PLATOON_REQ_UNATTRIBUTED);
}

static __always_inline struct platoon_sock *new_conn(const struct sock *sk, __u32 pid, __u8 side)
{
	struct platoon_sock *ps = bpf_sk_storage_get(&sock_store, (void *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);

	if (ps) {
		__builtin_memset(ps, 0, sizeof(*ps));
		ps->pid = pid;
		ps->side = side;
	}
	return ps;
}

/* A connection that predates the attach, claimed at a target thread's first read of it: its
 * side from the ports the target listens on, and the request in flight marked partial. */
static __always_inline struct platoon_sock *claim(const struct sock *sk, __u32 tgid, __u64 now)
{
	__u16 port = sk->__sk_common.skc_num;
	__u32 *owner = bpf_map_lookup_elem(&listen_ports, &port);
	struct platoon_sock *ps;

	if (!is_tcp_stream(sk))
		return NULL;
	/* owner 0: a port seeded in whole-machine mode, whoever listens on it */
	ps = new_conn(sk, tgid, owner && (*owner == tgid || !*owner) ? PLATOON_REQ_SERVER : PLATOON_REQ_CLIENT);
	if (!ps)
		return NULL;
	if (ps->side == PLATOON_REQ_SERVER) {
		ps->phase = REQ_WAITING;    /* the read below turns it into a partial request */
		ps->start_ns = now;
		ps->flags = PLATOON_REQ_PARTIAL;
	}
	return ps;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(req_data_ready, const struct sock *sk)
{
	struct platoon_sock *ps = bpf_sk_storage_get(&sock_store, (void *)sk, 0, 0);
	__u64 now;

	if (!ps)
		return 0;
	if (ps->phase != (ps->side == PLATOON_REQ_SERVER ? REQ_IDLE : REQ_SENT) || !readable_bytes(sk))
		return 0;
	now = bpf_ktime_get_boot_ns();
	if (ps->side == PLATOON_REQ_SERVER) {
		ps->start_ns = now;
		ps->phase = REQ_WAITING;
	} else {
		ps->ready_ns = now;
		ps->phase = REQ_READY;
	}
	return 0;
}

static __always_inline int on_read(const struct sock *sk, int ret, int flags)
{
	__u64 id = bpf_get_current_pid_tgid(), now;
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct platoon_thread_stats *s;
	struct platoon_sock *ps;

	if (ret <= 0 || (flags & (REQ_MSG_PEEK | REQ_MSG_ERRQUEUE)) || !is_target(tgid))
		return 0;
	now = bpf_ktime_get_boot_ns();
	ps = bpf_sk_storage_get(&sock_store, (void *)sk, 0, 0);
	if (!ps)
		ps = claim(sk, tgid, now);
	if (!ps)
		return 0;
	s = current_stats(false, now);
	if (s)
		running_now(s, now);
	if (!ps->pid)
		ps->pid = tgid;     /* accepted on a port any process may own (whole-machine mode) */
	/* A data_ready on another CPU since `now` was taken may have stamped a later ready. */
	if (ps->start_ns > now)
		ps->start_ns = now;
	if (ps->ready_ns > now)
		ps->ready_ns = now;
	if (ps->side == PLATOON_REQ_SERVER) {
		if (ps->phase == REQ_WAITING) {
			ps->read_ns = now;
			ps->phase = REQ_SERVING;
			split_wait(ps, s, tid, ps->start_ns, now);
		} else if (ps->phase == REQ_IDLE) {
			/* Bytes read with no data_ready since the response began: they came before it,
			 * so requests overlap on this connection (pipelining, HTTP/2). */
			ps->flags |= PLATOON_REQ_OVERLAPPED;
		}
	} else if (ps->phase == REQ_READY) {
		split_wait(ps, s, tid, ps->ready_ns, now);
		emit_request(sk, ps, tid, now, now - ps->ready_ns, ps->ready_ns - ps->start_ns);
		ps->phase = REQ_IDLE;
	}
	ps->reader = tid;
	return 0;
}

static __always_inline int on_write(const struct sock *sk, int ret)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct platoon_thread_stats *s;
	struct platoon_sock *ps;
	__u64 now;

	if (ret <= 0 || !is_target(tgid))
		return 0;
	ps = bpf_sk_storage_get(&sock_store, (void *)sk, 0, 0);
	if (!ps)
		return 0;
	now = bpf_ktime_get_boot_ns();
	s = current_stats(false, now);
	if (s)
		running_now(s, now);
	if (ps->side == PLATOON_REQ_SERVER) {
		if (ps->phase == REQ_SERVING) {
			emit_request(sk, ps, ps->reader, now, ps->read_ns - ps->start_ns, now - ps->read_ns);
			ps->phase = REQ_IDLE;
		}
		return 0;
	}
	if (ps->phase == REQ_IDLE) {
		ps->start_ns = now;
		ps->phase = REQ_SENT;
	} else if (ps->phase == REQ_SENT) {
		ps->flags |= PLATOON_REQ_OVERLAPPED;   /* a second request before the first reply */
	}
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(req_recv, const struct sock *sk, int ret, int flags)
{
	return on_read(sk, ret, flags);
}

/* A write's moment is its start where the kernel has tcp:tcp_sendmsg_locked (6.12; it fires
 * before each chunk is copied, sendfile and splice included), else its end: sock_send_length
 * fires after the send returns, which on loopback includes the delivery to the peer. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(req_send_start, const struct sock *sk, const struct msghdr *msg, const struct sk_buff *skb,
	     int size_goal)
{
	return on_write(sk, 1);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(req_send, const struct sock *sk, int ret, int flags)
{
	return on_write(sk, ret);
}

/* Which connections are the targets': a listen() by a target (in its own context), a
 * handshake completed on a port a target listens on (softirq), a connect() by a target. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(req_sock_state, const struct sock *sk, const int oldstate, const int newstate)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, *owner;
	__u16 port;

	if (sk->sk_protocol != IPPROTO_TCP)
		return 0;
	port = sk->__sk_common.skc_num;
	if (newstate == TCP_LISTEN) {
		if (is_target(tgid))
			bpf_map_update_elem(&listen_ports, &port, &tgid, BPF_ANY);
	} else if (oldstate == TCP_LISTEN && newstate == TCP_CLOSE) {
		/* (a child socket is cloned from its listener: LISTEN -> SYN_RECV is a connection) */
		owner = bpf_map_lookup_elem(&listen_ports, &port);
		if (owner && is_target(*owner))
			bpf_map_delete_elem(&listen_ports, &port);
	} else if (oldstate == TCP_SYN_RECV && newstate == TCP_ESTABLISHED) {
		owner = bpf_map_lookup_elem(&listen_ports, &port);
		if (owner)
			new_conn(sk, *owner, PLATOON_REQ_SERVER);
	} else if (oldstate == TCP_CLOSE && newstate == TCP_SYN_SENT && is_target(tgid)) {
		new_conn(sk, tgid, PLATOON_REQ_CLIENT);
	}
	return 0;
}

#endif
