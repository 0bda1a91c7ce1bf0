#include "bpf/collectors/load_plan.hpp"

#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

#include "bpf/collectors/runtime_usdt.hpp"
#include "bpf/collectors/thread_entries.hpp"
#include "platoon.skel.h"

namespace platoon::collectors {

namespace {

// libbpf's debug chatter (and the warnings of a failed attempt we recover from, like a tp_btf
// load before the raw_tp fallback) only with verbose.
std::atomic<bool> g_verbose{false};
// The first warning of the current load attempt that names a failure ("prog 'x': BPF program
// load failed: Invalid argument"): the reason a fallback note or error gives.
std::mutex g_reason_mu;
std::string g_reason;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_WARN) {
    va_list copy;
    va_copy(copy, args);
    char line[512];
    std::vsnprintf(line, sizeof line, fmt, copy);
    va_end(copy);
    std::string l(line);
    while (!l.empty() && (l.back() == '\n' || l.back() == ' ')) l.pop_back();
    if (l.rfind("libbpf: ", 0) == 0) l.erase(0, 8);
    std::lock_guard lk(g_reason_mu);
    if (g_reason.empty() && l.find("fail") != std::string::npos) g_reason = l;
  }
  if (!g_verbose.load(std::memory_order_relaxed)) return 0;
  return std::vfprintf(stderr, fmt, args);
}

std::string take_reason() {
  std::lock_guard lk(g_reason_mu);
  return std::exchange(g_reason, {});
}

// One hook in both flavours; an attempt loads one of each pair.
struct HookPair {
  bpf_program* btf;
  bpf_program* raw;
};

std::vector<HookPair> hook_pairs(platoon_bpf* s) {
  auto& p = s->progs;
  return {{p.switch_btf, p.switch_raw},         {p.waking_btf, p.waking_raw},
          {p.wakeup_btf, p.wakeup_raw},         {p.wakeup_new_btf, p.wakeup_new_raw},
          {p.migrate_btf, p.migrate_raw},       {p.exit_btf, p.exit_raw},
          {p.exec_btf, p.exec_raw},             {p.fork_btf, p.fork_raw}};
}

// The enter and exit programs of each kEpollSyscalls entry, in its order.
struct EpollPrograms {
  bpf_program* enter;
  bpf_program* exit;
};

std::array<EpollPrograms, kEpollSyscalls.size()> epoll_programs(platoon_bpf* s) {
  auto& p = s->progs;
  return {{{p.epoll_wait_enter, p.epoll_wait_exit},
           {p.epoll_pwait_enter, p.epoll_pwait_exit},
           {p.epoll_pwait2_enter, p.epoll_pwait2_exit}}};
}

uint32_t round_ringbuf(size_t bytes) {
  // A ring buffer's size is a power of two and a multiple of the page size.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t n = page;
  while (n < bytes && n < (size_t{1} << 31)) n <<= 1;
  return static_cast<uint32_t>(n);
}

// The knobs that follow from the options and the kernel alone, with the notes of what the
// kernel lacks for them.
LoadPlan::Knobs plan_knobs(const CollectorOptions& o, const KernelFeatures& kf, const Attempt& a,
                           std::vector<std::string>& notes) {
  LoadPlan::Knobs k;
  k.events = o.record_events && kf.ringbuf;
  if (o.record_events && !kf.ringbuf)
    notes.push_back("events: kernel has no BPF ring buffer (5.8+): raw events are not recorded, aggregates are");
  k.comm = o.comm.substr(0, PLATOON_COMM_LEN - 1);
  k.wakeup_bytes = std::max<uint64_t>(o.ringbuf_bytes / 4, 1);
  k.follow_forks = o.follow_forks || !o.cgroup_dir.empty();
  k.all = o.all;
  k.self = static_cast<uint32_t>(getpid());
  k.switch_state_arg = kf.switch_state_arg;
  if (!kf.switch_state_arg)
    notes.push_back("sched_switch has no prev_state argument (5.18+): a block a signal cancelled counts as involuntary");
  k.cpu_slots = std::min<uint32_t>(std::max<uint32_t>(o.cpu_slots, 1), PLATOON_MAX_CPUS);
  // Blocked time starts at the switch-out inside the call where the switch hook can tell
  // (bpf/in_epoll.bpf.h); then only the exit tracepoints are attached.
#if defined(__x86_64__) || defined(__aarch64__)
  k.epoll_at_switch = !a.raw_tp && kf.task_pt_regs;
#endif
  k.task_storage = !a.raw_tp && kf.task_storage && kf.task_iter;
  k.threads_max = std::max<uint32_t>(o.threads_max, 1);
  return k;
}

// The epoll programs and the runtime probes: loaded when the attempt allows optional programs,
// the kernel has them, and some view needs what they collect (o.fields: a dashboard showing no
// IO or drain column does not pay for those hooks).
void plan_optional_programs(const CollectorOptions& o, const LoadInputs& in, LoadPlan& plan) {
  const bool optional = plan.attempt.optional;
  const bool want_io = (o.fields & snapshot::kFieldIo) != 0;
  const bool no_epoll = !optional || in.inject.has("epoll") || !want_io;
  bool any_epoll = false;
  for (size_t i = 0; i < kEpollSyscalls.size(); ++i) {
    plan.epoll[i] = !no_epoll && in.have_tracefs && in.epoll_exits[i];
    any_epoll |= plan.epoll[i];
    if (!plan.epoll[i] && optional && want_io)
      plan.notes.push_back(std::string("epoll: no tracepoint for ") + kEpollSyscalls[i] +
                           (in.have_tracefs ? "" : " (no tracefs)"));
  }
  if (!any_epoll) plan.fields &= ~snapshot::kFieldIo;
  const bool want_drain = o.attach_usdt && (o.fields & snapshot::kFieldDrain) != 0;
  plan.usdt = want_drain && optional && !in.inject.has("usdt");
  if (want_drain && !plan.usdt && optional)
    plan.notes.push_back("usdt: runtime probes failed to load (injected by PLATOON_INJECT_LOAD_FAIL)");
  if (!plan.usdt) plan.fields &= ~snapshot::kFieldDrain;
  plan.requests = o.requests && optional && !plan.attempt.raw_tp && plan.attempt.requests && in.kernel.sock_requests &&
                  in.kernel.ringbuf;
  plan.send_start = plan.requests && in.kernel.tcp_send_start;
  if (plan.requests) plan.fields |= snapshot::kFieldRequests;
  if (plan.requests && !plan.send_start)
    plan.notes.push_back("requests: a write counts at its end (no tcp:tcp_sendmsg_locked, 6.12+): service includes the send");
  if (o.requests && optional && !plan.requests)
    plan.notes.push_back(plan.attempt.raw_tp      ? "requests: need tp_btf programs (socket storage)"
                         : !plan.attempt.requests ? "requests: the socket programs failed to load (the reason is above)"
                         : !in.kernel.ringbuf     ? "requests: kernel has no BPF ring buffer (5.8+)"
                                                  : "requests: kernel lacks sock:sock_recv_length on a sock (6.3+)");
  const uint32_t gated = snapshot::kFieldsBpf & ~o.fields & (snapshot::kFieldIo | snapshot::kFieldDrain);
  if (gated) {
    std::string names;
    for (const auto& n : snapshot::missing_fields(~gated)) names += (names.empty() ? "" : ", ") + n;
    plan.notes.push_back("not collected (no view shows it): " + names);
  }
}

// Opens and loads the skeleton for one plan. On failure returns nullptr and the libbpf error
// (negative errno).
SkelPtr load(const LoadPlan& plan, const Injected& inject, int* err) {
  take_reason();
  const char* flavour = plan.attempt.raw_tp ? "raw_tp" : "tp_btf";
  if (inject.has(flavour)) {
    // As a kernel without trampolines (tp_btf) or with an older verifier answers.
    std::lock_guard lk(g_reason_mu);
    g_reason = std::string(flavour) + " programs failed to load (injected by PLATOON_INJECT_LOAD_FAIL)";
    *err = -EINVAL;
    return nullptr;
  }
  if (plan.requests && inject.has("requests")) {
    // As a kernel whose verifier refuses the socket programs answers.
    std::lock_guard lk(g_reason_mu);
    g_reason = "the socket programs failed to load (injected by PLATOON_INJECT_LOAD_FAIL)";
    *err = -EINVAL;
    return nullptr;
  }
  SkelPtr skel(platoon_bpf__open());
  if (!skel) {
    *err = -errno;
    return nullptr;
  }
  apply_plan(plan, skel.get());
  *err = platoon_bpf__load(skel.get());
  if (*err) return nullptr;
  return skel;
}

// No attempt will do better: the kernel refuses us, not the programs.
bool refused(int err) { return err == -EPERM || (err == -EACCES && geteuid() != 0); }

}  // namespace

void capture_libbpf_output(bool verbose) {
  g_verbose.store(verbose);
  libbpf_set_print(libbpf_print);
}

LoadInputs probe_load_inputs(const std::string& events_dir) {
  LoadInputs in;
  in.inject = injected_failures();
  in.kernel = probe_features(in.inject);
  in.have_tracefs = !events_dir.empty();
  for (size_t i = 0; i < kEpollSyscalls.size(); ++i)
    in.epoll_exits[i] = in.have_tracefs &&
                        access((events_dir + "/syscalls/sys_exit_" + kEpollSyscalls[i]).c_str(), F_OK) == 0;
  return in;
}

LoadPlan plan_load(const CollectorOptions& o, const LoadInputs& in, const Attempt& a) {
  const KernelFeatures& kf = in.kernel;
  LoadPlan plan;
  plan.attempt = a;
  plan.knobs = plan_knobs(o, kf, a, plan.notes);
  plan.pairs_max = std::max<uint32_t>(o.pairs_max, 1);
  plan.ringbuf = kf.ringbuf;
  // Without recording the ring buffer is never written: keep it one page.
  plan.ringbuf_bytes = round_ringbuf(plan.knobs.events ? o.ringbuf_bytes : 1);
  // The attach-time task walk is a tracing program too: only with tp_btf.
  plan.seed = !a.raw_tp && a.optional && kf.task_iter;
  if (!a.raw_tp && !kf.task_iter)
    plan.notes.push_back("seed: kernel has no task iterator (5.8+): threads existing at attach appear at their first event");
  plan_optional_programs(o, in, plan);
  // A request record is 112 bytes with the ring's header: 16 MiB hold ~150,000, three seconds
  // at 50,000 requests/s, and the collector drains at every snapshot and every poll.
  plan.request_ring_bytes = round_ringbuf(plan.requests ? 16u << 20 : 1);
  return plan;
}

void apply_plan(const LoadPlan& plan, platoon_bpf* skel) {
  const LoadPlan::Knobs& k = plan.knobs;
  auto& r = *skel->rodata;
  r.targ_events = k.events;
  r.targ_comm_set = !k.comm.empty();
  std::memset(r.targ_comm, 0, sizeof r.targ_comm);
  std::memcpy(r.targ_comm, k.comm.data(), std::min(k.comm.size(), sizeof r.targ_comm - 1));
  r.targ_wakeup_bytes = k.wakeup_bytes;
  r.targ_follow_forks = k.follow_forks;
  r.targ_all = k.all;
  r.targ_self = k.self;
  r.targ_switch_state_arg = k.switch_state_arg;
  r.targ_cpu_slots = k.cpu_slots;
  r.targ_epoll_at_switch = k.epoll_at_switch;
  r.targ_task_storage = k.task_storage;
  r.targ_threads_max = k.threads_max;
  r.targ_requests = plan.requests;

  for (const HookPair& h : hook_pairs(skel)) {
    bpf_program__set_autoload(h.btf, !plan.attempt.raw_tp);
    bpf_program__set_autoload(h.raw, plan.attempt.raw_tp);
  }
  bpf_program__set_autoload(skel->progs.seed_threads, plan.seed);
  const auto epoll = epoll_programs(skel);
  for (size_t i = 0; i < epoll.size(); ++i) {
    bpf_program__set_autoload(epoll[i].enter, plan.epoll[i] && !k.epoll_at_switch);
    bpf_program__set_autoload(epoll[i].exit, plan.epoll[i]);
  }
  for (const UsdtProbe& u : usdt_probes(skel)) bpf_program__set_autoload(u.prog, plan.usdt);
  bpf_program__set_autoload(skel->progs.flush_stages, k.events);
  bpf_program__set_autoload(skel->progs.dump_threads, k.task_storage);
  for (bpf_program* p : {skel->progs.req_data_ready, skel->progs.req_recv, skel->progs.req_sock_state})
    bpf_program__set_autoload(p, plan.requests);
  bpf_program__set_autoload(skel->progs.req_send_start, plan.send_start);
  bpf_program__set_autoload(skel->progs.req_send, plan.requests && !plan.send_start);
  if (!plan.requests) {
    // Socket storage (5.2) only where the programs that use it load: a one-entry hash otherwise.
    bpf_map__set_type(skel->maps.sock_store, BPF_MAP_TYPE_HASH);
    bpf_map__set_map_flags(skel->maps.sock_store, 0);
    bpf_map__set_max_entries(skel->maps.sock_store, 1);
  }

  ThreadEntries::shape_maps(skel, k.task_storage, k.threads_max);
  bpf_map__set_max_entries(skel->maps.pairs, plan.pairs_max);
  if (plan.ringbuf) {
    bpf_map__set_max_entries(skel->maps.events, plan.ringbuf_bytes);
    bpf_map__set_max_entries(skel->maps.request_ring, plan.request_ring_bytes);
  } else {
    // The programs still name the map, in code the verifier drops (targ_events is false):
    // any map type the kernel can create will do.
    bpf_map__set_type(skel->maps.events, BPF_MAP_TYPE_ARRAY);
    bpf_map__set_key_size(skel->maps.events, 4);
    bpf_map__set_value_size(skel->maps.events, 4);
    bpf_map__set_max_entries(skel->maps.events, 1);
    bpf_map__set_type(skel->maps.request_ring, BPF_MAP_TYPE_ARRAY);
    bpf_map__set_key_size(skel->maps.request_ring, 4);
    bpf_map__set_value_size(skel->maps.request_ring, 4);
    bpf_map__set_max_entries(skel->maps.request_ring, 1);
  }
}

void SkelDeleter::operator()(platoon_bpf* s) const { platoon_bpf__destroy(s); }

Loaded load_with_fallback(const CollectorOptions& o, const LoadInputs& in) {
  std::vector<Attempt> attempts;
  if (!o.force_raw_tp && in.kernel.tp_btf) {
    attempts.push_back({false, true});
    if (o.requests) attempts.push_back({false, true, false});
  }
  attempts.push_back({true, true});
  attempts.push_back({true, false});
  Loaded l;
  for (const Attempt& a : attempts) {
    l.plan = plan_load(o, in, a);
    l.skel = load(l.plan, in.inject, &l.err);
    if (l.skel || refused(l.err)) break;
    std::string reason = take_reason();
    if (reason.empty()) reason = errstr(l.err);
    l.reasons += std::string(l.reasons.empty() ? "" : "; ") + a.name() + ": " + reason;
  }
  return l;
}

bool Loaded::permission_denied() const { return refused(err); }

OpenError Loaded::error_kind() const { return permission_denied() ? OpenError::permission : OpenError::unsupported; }

std::string Loaded::error_message(bool verbose) const {
  if (permission_denied()) return need_root("loading the programs", err);
  return "the BPF programs do not load on this kernel (" + reasons + ")" +
         (verbose ? "" : "; --verbose shows libbpf's log");
}

std::vector<std::string> Loaded::notes(const CollectorOptions& o, const KernelFeatures& kf) const {
  std::vector<std::string> out;
  if (!reasons.empty())
    out.push_back("bpf: " + reasons + "; using " +
                  (plan.attempt.optional ? plan.attempt.name() : "raw_tp without epoll and usdt (lacks: io, drain)"));
  else if (!kf.tp_btf && !o.force_raw_tp)
    out.push_back("bpf: kernel has no BTF-typed tracepoints (5.5+): using raw_tp");
  out.insert(out.end(), plan.notes.begin(), plan.notes.end());
  return out;
}

std::string errstr(int err) { return std::strerror(err < 0 ? -err : err); }

std::string need_root(const char* step, int err) {
  return std::string("BPF needs root or CAP_BPF+CAP_PERFMON (") + step + ": " + errstr(err) +
         "): run as root, or use --procfs";
}

}  // namespace platoon::collectors
