// The hook floor: a program that returns at once on each tracepoint platoon's collector uses
// for its aggregates (scheduler events and epoll exits), and on those of its request programs. What the server pays under it is what
// the hooks themselves cost (the kernel's tracepoint dispatch and a program call), before any
// of platoon's work. bench/hook_floor/main.cpp loads it (bench-observer-cpu.sh's `floor`).
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/sched_switch") int BPF_PROG(floor_switch) { return 0; }
SEC("tp_btf/sched_waking") int BPF_PROG(floor_waking) { return 0; }
SEC("tp_btf/sched_wakeup") int BPF_PROG(floor_wakeup) { return 0; }
SEC("tp_btf/sched_migrate_task") int BPF_PROG(floor_migrate) { return 0; }
SEC("tracepoint/syscalls/sys_exit_epoll_wait") int floor_epoll_wait(void* ctx) { return 0; }
SEC("tracepoint/syscalls/sys_exit_epoll_pwait") int floor_epoll_pwait(void* ctx) { return 0; }
SEC("tracepoint/syscalls/sys_exit_epoll_pwait2") int floor_epoll_pwait2(void* ctx) { return 0; }
/* The socket tracepoints of the request programs (bpf/requests.bpf.h), loaded by --requests-only. */
SEC("tp_btf/sk_data_ready") int BPF_PROG(floor_data_ready) { return 0; }
SEC("tp_btf/sock_recv_length") int BPF_PROG(floor_recv) { return 0; }
SEC("tp_btf/tcp_sendmsg_locked") int BPF_PROG(floor_send_start) { return 0; }
SEC("tp_btf/inet_sock_set_state") int BPF_PROG(floor_sock_state) { return 0; }

char LICENSE[] SEC("license") = "GPL";
