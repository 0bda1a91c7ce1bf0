#include "bpf/collectors/features.hpp"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string_view>

namespace platoon::collectors {

Injected injected_failures() {
  Injected out;
  const char* env = std::getenv("PLATOON_INJECT_LOAD_FAIL");
  if (!env) return out;
  std::stringstream in(env);
  std::string name;
  while (std::getline(in, name, ','))
    if (!name.empty()) out.names.insert(name);
  return out;
}

namespace {

struct BtfDeleter {
  void operator()(btf* b) const { btf__free(b); }
};

// Parameters of the function a `btf_trace_<tp>` typedef points to (the tracepoint's
// arguments plus the leading `void *__data`), or -1 when the kernel has no such typedef.
int trace_params(const btf* b, const char* typedef_name) {
  const int id = btf__find_by_name_kind(b, typedef_name, BTF_KIND_TYPEDEF);
  if (id < 0) return -1;
  const btf_type* t = btf__type_by_id(b, static_cast<__u32>(id));
  if (t) t = btf__type_by_id(b, t->type);  // the pointer
  if (t && btf_is_ptr(t)) t = btf__type_by_id(b, t->type);
  return t && btf_is_func_proto(t) ? btf_vlen(t) : -1;
}

// Whether the tracepoint's first argument (after `void *__data`) points to a struct sock.
bool param_is_sock(const btf* b, const char* typedef_name) {
  if (trace_params(b, typedef_name) < 2) return false;
  const btf_type* t = btf__type_by_id(b, btf__type_by_id(b, btf__find_by_name_kind(b, typedef_name, BTF_KIND_TYPEDEF))->type);
  t = btf__type_by_id(b, t->type);  // the function prototype
  const btf_param* p = btf_params(t) + 1;
  const btf_type* arg = btf__type_by_id(b, p->type);
  if (!arg || !btf_is_ptr(arg)) return false;
  arg = btf__type_by_id(b, arg->type);
  while (arg && btf_is_mod(arg)) arg = btf__type_by_id(b, arg->type);  // const, volatile
  const char* name = arg && btf_is_struct(arg) ? btf__name_by_offset(b, arg->name_off) : nullptr;
  return name && std::string_view(name) == "sock";
}

// Whether struct `type` has a member called `member` in the kernel's BTF: a field that exists
// only under a kernel config option.
bool has_member(const btf* b, const char* type, const char* member) {
  const int id = btf__find_by_name_kind(b, type, BTF_KIND_STRUCT);
  if (id < 0) return false;
  const btf_type* t = btf__type_by_id(b, static_cast<__u32>(id));
  const btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++m)
    if (const char* name = btf__name_by_offset(b, m->name_off); name && std::string_view(name) == member) return true;
  return false;
}

}  // namespace

KernelFeatures probe_features(const Injected& inject) {
  KernelFeatures f;
  std::unique_ptr<btf, BtfDeleter> vmlinux(btf__load_vmlinux_btf());
  if (vmlinux) {
    const int switch_params = trace_params(vmlinux.get(), "btf_trace_sched_switch");
    f.tp_btf = switch_params > 0;
    // void *__data, preempt, prev, next, prev_state (5.18; the 5.x-stable backports too).
    f.switch_state_arg = switch_params >= 5;
    f.task_iter = btf__find_by_name_kind(vmlinux.get(), "bpf_iter__task", BTF_KIND_STRUCT) >= 0;
    // The run queue's irq clock exists only with CONFIG_IRQ_TIME_ACCOUNTING; the config itself
    // (/proc/config.gz, /boot) is often not there, the type always is.
    f.irq_time = has_member(vmlinux.get(), "rq", "prev_irq_time");
    // void *__data, sk, ret, flags: the receive and send tracepoints took the struct socket
    // before they took the sock (6.3's first form).
    const bool sock_first = param_is_sock(vmlinux.get(), "btf_trace_sock_recv_length") &&
                            param_is_sock(vmlinux.get(), "btf_trace_sock_send_length");
    f.sock_requests = sock_first && trace_params(vmlinux.get(), "btf_trace_sk_data_ready") == 2;
    f.tcp_send_start = trace_params(vmlinux.get(), "btf_trace_tcp_sendmsg_locked") == 5;
  } else {
    f.tp_btf = f.task_iter = f.switch_state_arg = f.irq_time = f.sock_requests = f.tcp_send_start = false;
  }
  f.ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr) == 1;
  f.boot_clock = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_ktime_get_boot_ns, nullptr) == 1;
  // Asked of raw_tp, the stricter of the two switch program types (tp_btf's tracing programs
  // get every helper raw_tp gets).
  f.task_pt_regs = libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_FUNC_task_pt_regs, nullptr) == 1;
  // The map, and its helpers where the hooks without task arguments (epoll tracepoints, USDT
  // uprobes) call them on the current task.
  f.task_storage = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, nullptr) == 1;
  for (bpf_prog_type t : {BPF_PROG_TYPE_KPROBE, BPF_PROG_TYPE_TRACEPOINT})
    for (bpf_func_id h : {BPF_FUNC_task_storage_get, BPF_FUNC_get_current_task_btf})
      f.task_storage = f.task_storage && libbpf_probe_bpf_helper(t, h, nullptr) == 1;

  if (inject.has("boot_clock")) f.boot_clock = false;
  if (inject.has("task_iter")) f.task_iter = false;
  if (inject.has("ringbuf")) f.ringbuf = false;
  if (inject.has("switch_state_arg")) f.switch_state_arg = false;
  if (inject.has("task_pt_regs")) f.task_pt_regs = false;
  if (inject.has("task_storage")) f.task_storage = false;
  if (inject.has("irq_time")) f.irq_time = false;
  if (inject.has("sock_requests")) f.sock_requests = false;
  if (inject.has("tcp_send_start")) f.tcp_send_start = false;
  return f;
}

}  // namespace platoon::collectors
