// What the running kernel offers the programs in bpf/platoon.bpf.c, probed once per
// Collector::open, so that a missing feature drops what depends on it (and says so) instead of
// making the whole program set fail to load. Minimum kernels (mainline):
//
//   boot_clock        bpf_ktime_get_boot_ns, every program's clock        5.8   (else: procfs)
//   tp_btf            BTF-typed tracepoints (btf_trace_* in vmlinux BTF)   5.5   (else: raw_tp, 4.17)
//   task_iter         iter/task, the attach-time walk that seeds threads   5.8   (else: threads appear at their first event)
//   ringbuf           BPF ring buffer, raw events while recording          5.8   (else: aggregates only)
//   switch_state_arg  sched_switch's prev_state argument                   5.18  (else: prev's state at the tracepoint)
//   task_pt_regs      bpf_task_pt_regs: a switched-out task's syscall number 5.15  (else: epoll enter tracepoints too)
//   task_storage      task-local storage for thread entries (with tp_btf)  5.11  (else: the stats hash)
//   irq_time          rq->prev_irq_time, CONFIG_IRQ_TIME_ACCOUNTING        config (else: irq wait not measured)
//   sock_requests     sock:sk_data_ready, sock_recv_length and sock_send_length taking the
//                     sock: per-request latency                          6.3   (else: no requests)
//   tcp_send_start    tcp:tcp_sendmsg_locked, a write's start              6.12  (else: its end)
//
// Probes read the kernel's BTF (type names) or ask libbpf (libbpf_probe_bpf_*), never the
// kernel version: backports and configs make versions lie.
//
// PLATOON_INJECT_LOAD_FAIL=name[,name...] simulates a kernel without them, for tests:
// boot_clock, task_iter, ringbuf, switch_state_arg, task_pt_regs, task_storage, irq_time,
// sock_requests and tcp_send_start make the probe answer "missing"; tp_btf and raw_tp make that
// program set fail to load (-EINVAL, as a kernel without BPF trampolines or with an older
// verifier answers), requests makes the socket programs fail to load, usdt the runtime probes,
// and epoll hides the syscall tracepoints.
#pragma once

#include <set>
#include <string>

namespace platoon::collectors {

struct Injected {
  std::set<std::string> names;
  bool has(const char* name) const { return names.count(name) != 0; }
};
// From the environment; empty when PLATOON_INJECT_LOAD_FAIL is unset.
Injected injected_failures();

struct KernelFeatures {
  bool boot_clock = true;
  bool tp_btf = true;
  bool task_iter = true;
  bool ringbuf = true;
  bool switch_state_arg = true;
  bool task_pt_regs = true;
  bool task_storage = true;
  // The kernel accounts hard and soft interrupt time per run queue, so the irq part of a wait
  // can be measured (bpf/wait_split.bpf.h). Without it the kernel only samples interrupts at
  // the tick: the part would read 0 whatever the interrupts took, so it is not offered at all.
  bool irq_time = true;
  bool sock_requests = true;
  bool tcp_send_start = true;   // tcp:tcp_sendmsg_locked (6.12): a write's start, not its end
};
KernelFeatures probe_features(const Injected& inject);

}  // namespace platoon::collectors
