#include "bpf/collectors/collector.hpp"
#include "bpf/collectors/machine_context.hpp"
#include "bpf/snapshot/clock.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "bpf/collectors/features.hpp"
#include "bpf/collectors/map_batch.hpp"
#include "bpf/collectors/runtime_usdt.hpp"
#include "bpf/collectors/cgroup_members.hpp"
#include "bpf/collectors/pair_ledger.hpp"
#include "bpf/collectors/thread_entries.hpp"
#include "bpf/platoon.h"
#include "bpf/collectors/system.hpp"
#include "platoon.skel.h"

namespace platoon::bpf {

using model::boottime_ns;

namespace {

// libbpf's print callback is process-wide; its debug chatter (and the warnings of a failed
// attempt we recover from, like a tp_btf load before the raw_tp fallback) only with verbose.
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

struct SkelDeleter {
  void operator()(platoon_bpf* s) const { platoon_bpf__destroy(s); }
};
struct LinkDeleter {
  void operator()(bpf_link* l) const { bpf_link__destroy(l); }
};
struct RingDeleter {
  void operator()(ring_buffer* r) const { ring_buffer__free(r); }
};
using SkelPtr = std::unique_ptr<platoon_bpf, SkelDeleter>;
using LinkPtr = std::unique_ptr<bpf_link, LinkDeleter>;
using RingPtr = std::unique_ptr<ring_buffer, RingDeleter>;

// One hook in both flavours; the loader keeps one of each pair.
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

struct EpollHook {
  const char* syscall;
  bpf_program* enter;
  bpf_program* exit;
};

std::vector<EpollHook> epoll_hooks(platoon_bpf* s) {
  auto& p = s->progs;
  return {{"epoll_wait", p.epoll_wait_enter, p.epoll_wait_exit},
          {"epoll_pwait", p.epoll_pwait_enter, p.epoll_pwait_exit},
          {"epoll_pwait2", p.epoll_pwait2_enter, p.epoll_pwait2_exit}};
}

size_t round_ringbuf(size_t bytes) {
  // A ring buffer's size is a power of two and a multiple of the page size.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t n = page;
  while (n < bytes && n < (size_t{1} << 31)) n <<= 1;
  return n;
}

std::string errstr(int err) { return std::strerror(err < 0 ? -err : err); }

// Why open() gave up, for its caller.
struct OpenFailure {
  OpenError kind = OpenError::other;
  std::string message;
};
// The errno the kernel refused with goes in the message, so a note or error says what the kernel
// said (and a capability taken away by a container or systemd is not mistaken for a missing root).
std::string need_root(const char* step, int err) {
  return std::string("BPF needs root or CAP_BPF+CAP_PERFMON (") + step + ": " + errstr(err) +
         "): run as root, or use --procfs";
}
// No attempt will do better: the kernel refuses us, not the programs.
bool permission_denied(int err) { return err == -EPERM || (err == -EACCES && geteuid() != 0); }


}  // namespace

struct Collector::Impl {
  CollectorOptions opts;
  SkelPtr skel;
  bool raw_tp = false;
  std::vector<LinkPtr> usdt_links;
  RingPtr ring;
  std::vector<std::string> notes;
  std::unordered_set<pid_t> pids;         // added from user space (for USDT attach)
  std::string comm;                       // truncated to what the kernel keeps
  int ncpus = 1;
  const std::function<void(const void*, size_t)>* sink = nullptr;
  size_t polled = 0;
  uint32_t fields = model::kFieldsBpf;
  bool usdt = true;                       // the runtime probes loaded
  std::unordered_map<pid_t, std::string> usdt_exe;  // pid -> executable its probes were looked up in
  std::map<pid_t, std::unique_ptr<RuntimeStatsReader>> stats_tables;  // runtimes that keep their own drain counts
  MachineContext context;                 // per-CPU times and the threads' CPU cgroups
  std::optional<PairLedger> pairs;        // the pairs map and what aged out of it
  std::optional<ThreadEntries> entries;   // where the thread entries live, and reading them

  static int on_record(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    // No exception may cross libbpf's C frames: a throwing sink stops this poll.
    try {
      // A ring record is one or more event records back to back (a CPU's staged batch,
      // bpf/stage.bpf.h), each sized by its type.
      const auto* p = static_cast<const unsigned char*>(data);
      while (size >= sizeof(platoon_event_header)) {
        platoon_event_header h;
        std::memcpy(&h, p, sizeof h);
        const size_t n = platoon_event_size(h.type);
        if (n == 0 || n > size) break;  // not a record we wrote: the rest cannot be split
        if (self->sink) (*self->sink)(p, n);
        ++self->polled;
        p += n;
        size -= n;
      }
      return 0;
    } catch (...) {
      return -ECANCELED;
    }
  }

  // open(): checks and loads (create), then attaches (attach).
  static std::unique_ptr<Impl> create(const CollectorOptions& o, OpenFailure* f);
  bool attach(bool events, OpenFailure* f);
  // snapshot(): the steps after the threads.
  void forget_exited(const std::unordered_set<__u32>& exited, const KernelPairs& kernel_pairs);
  void read_losses(model::Snapshot& snap) const;

  std::vector<int> online_cpus;           // where flush_stages runs
  void enable_stages();
  void flush_stages();                    // every CPU's staged records into the ring buffer
  int flush_stage_on(int cpu);            // runs flush_stages on `cpu`; 0 or a negative errno

  void attach_usdt(pid_t pid);
  void seed();
  bool target(pid_t pid);
  void adopt_kernel_targets();
  void sync_cgroup(Collector& c);
};

namespace {

// One load attempt: the attach mode, what the kernel offers, and whether the optional programs
// (seed walk, epoll, runtime probes) are in. Fills the fields and notes of what it drops.
struct Attempt {
  bool raw_tp = false;
  bool optional = true;       // seed, epoll and usdt programs
};
struct Plan {
  uint32_t fields = model::kFieldsBpf;
  bool usdt = false;
  bool events = false;
  bool task_storage = false;  // thread entries in task-local storage (thread_entries.hpp)
  std::vector<std::string> notes;
};

// The epoll programs and the runtime probes: loaded when the attempt allows optional programs,
// the kernel has them, and some view needs what they collect (o.fields: a dashboard showing no
// IO or drain column does not pay for those hooks).
void plan_optional_programs(const CollectorOptions& o, const KernelFeatures& kf, const Injected& inject,
                            const Attempt& a, bool have_tracefs,
                            const std::string& events_dir, platoon_bpf* skel, Plan* plan) {
  const bool want_io = (o.fields & model::kFieldIo) != 0;
  const bool no_epoll = !a.optional || inject.has("epoll") || !want_io;
  bool any_epoll = false;
  // Blocked time starts at the switch-out inside the call where the switch hook can tell
  // (bpf/in_epoll.bpf.h); then only the exit tracepoints are attached.
#if defined(__x86_64__) || defined(__aarch64__)
  const bool at_switch = !a.raw_tp && kf.task_pt_regs;
#else
  const bool at_switch = false;
#endif
  skel->rodata->targ_epoll_at_switch = at_switch;
  for (const EpollHook& e : epoll_hooks(skel)) {
    const bool present = !no_epoll && have_tracefs &&
                         access((events_dir + "/syscalls/sys_exit_" + e.syscall).c_str(), F_OK) == 0;
    bpf_program__set_autoload(e.enter, present && !at_switch);
    bpf_program__set_autoload(e.exit, present);
    any_epoll |= present;
    if (!present && a.optional && want_io)
      plan->notes.push_back(std::string("epoll: no tracepoint for ") + e.syscall + (have_tracefs ? "" : " (no tracefs)"));
  }
  if (!any_epoll) plan->fields &= ~model::kFieldIo;
  const bool want_drain = o.attach_usdt && (o.fields & model::kFieldDrain) != 0;
  plan->usdt = want_drain && a.optional && !inject.has("usdt");
  for (const UsdtProbe& u : usdt_probes(skel)) bpf_program__set_autoload(u.prog, plan->usdt);
  if (want_drain && !plan->usdt && a.optional)
    plan->notes.push_back("usdt: runtime probes failed to load (injected by PLATOON_INJECT_LOAD_FAIL)");
  if (!plan->usdt) plan->fields &= ~model::kFieldDrain;
  const uint32_t gated = model::kFieldsBpf & ~o.fields & (model::kFieldIo | model::kFieldDrain);
  if (gated) {
    std::string names;
    for (const auto& n : model::missing_fields(~gated)) names += (names.empty() ? "" : ", ") + n;
    plan->notes.push_back("not collected (no view shows it): " + names);
  }
}

// Opens and loads the skeleton for one attempt. On failure returns nullptr and the libbpf
// error (negative errno).
SkelPtr load_skeleton(const CollectorOptions& o, const std::string& comm, const KernelFeatures& kf,
                      const Injected& inject, const Attempt& a, bool have_tracefs,
                      const std::string& events_dir, Plan* plan, int* err) {
  take_reason();
  if (inject.has(a.raw_tp ? "raw_tp" : "tp_btf")) {
    // As a kernel without trampolines (tp_btf) or with an older verifier answers.
    std::lock_guard lk(g_reason_mu);
    g_reason = std::string(a.raw_tp ? "raw_tp" : "tp_btf") + " programs failed to load (injected by PLATOON_INJECT_LOAD_FAIL)";
    *err = -EINVAL;
    return nullptr;
  }
  SkelPtr skel(platoon_bpf__open());
  if (!skel) {
    *err = -errno;
    return nullptr;
  }
  plan->events = o.record_events && kf.ringbuf;
  if (o.record_events && !kf.ringbuf)
    plan->notes.push_back("events: kernel has no BPF ring buffer (5.8+): raw events are not recorded, aggregates are");
  skel->rodata->targ_events = plan->events;
  skel->rodata->targ_wakeup_bytes = std::max<uint64_t>(o.ringbuf_bytes / 4, 1);
  skel->rodata->targ_comm_set = !comm.empty();
  skel->rodata->targ_follow_forks = o.follow_forks || !o.cgroup_dir.empty();
  skel->rodata->targ_all = o.all;
  skel->rodata->targ_self = static_cast<__u32>(getpid());
  skel->rodata->targ_switch_state_arg = kf.switch_state_arg;
  skel->rodata->targ_cpu_slots = std::min<uint32_t>(std::max<uint32_t>(o.cpu_slots, 1), PLATOON_MAX_CPUS);
  if (!kf.switch_state_arg)
    plan->notes.push_back("sched_switch has no prev_state argument (5.18+): a block a signal cancelled counts as involuntary");
  std::memset(skel->rodata->targ_comm, 0, sizeof skel->rodata->targ_comm);
  std::memcpy(skel->rodata->targ_comm, comm.data(), std::min(comm.size(), sizeof skel->rodata->targ_comm - 1));
  plan->task_storage = !a.raw_tp && kf.task_storage && kf.task_iter;
  ThreadEntries::plan(skel.get(), plan->task_storage, o.threads_max);
  bpf_map__set_max_entries(skel->maps.pairs, std::max<uint32_t>(o.pairs_max, 1));
  if (kf.ringbuf) {
    // Without recording the ring buffer is never written: keep it one page.
    bpf_map__set_max_entries(skel->maps.events,
                             static_cast<uint32_t>(round_ringbuf(plan->events ? o.ringbuf_bytes : 1)));
  } else {
    // The programs still name the map, in code the verifier drops (targ_events is false):
    // any map type the kernel can create will do.
    bpf_map__set_type(skel->maps.events, BPF_MAP_TYPE_ARRAY);
    bpf_map__set_key_size(skel->maps.events, 4);
    bpf_map__set_value_size(skel->maps.events, 4);
    bpf_map__set_max_entries(skel->maps.events, 1);
  }

  for (const HookPair& h : hook_pairs(skel.get())) {
    bpf_program__set_autoload(h.btf, !a.raw_tp);
    bpf_program__set_autoload(h.raw, a.raw_tp);
  }
  // The attach-time task walk is a tracing program too: only with tp_btf.
  const bool seed = !a.raw_tp && a.optional && kf.task_iter;
  bpf_program__set_autoload(skel->progs.seed_threads, seed);
  if (!a.raw_tp && !kf.task_iter)
    plan->notes.push_back("seed: kernel has no task iterator (5.8+): threads existing at attach appear at their first event");
  plan_optional_programs(o, kf, inject, a, have_tracefs, events_dir, skel.get(), plan);
  bpf_program__set_autoload(skel->progs.flush_stages, plan->events);

  *err = platoon_bpf__load(skel.get());
  if (*err) return nullptr;
  return skel;
}

// What the richest attempt that loaded left, or why none did.
struct Loaded {
  SkelPtr skel;
  Plan plan;
  Attempt attempt;
  std::string reasons;  // of the richer attempts that failed: "tp_btf: ...; raw_tp: ..."
  int err = 0;
};

// Attempts from the richest down: tp_btf, raw_tp (no trampolines needed), raw_tp without the
// optional programs. The first that loads wins; what it drops is noted and its fields kept.
Loaded load_with_fallback(const CollectorOptions& o, const std::string& comm, const KernelFeatures& kf,
                          const Injected& inject, const std::string& events_dir) {
  std::vector<Attempt> attempts;
  if (!o.force_raw_tp && kf.tp_btf) attempts.push_back({false, true});
  attempts.push_back({true, true});
  attempts.push_back({true, false});
  Loaded l;
  for (const Attempt& a : attempts) {
    l.plan = Plan{};
    l.attempt = a;
    l.skel = load_skeleton(o, comm, kf, inject, a, !events_dir.empty(), events_dir, &l.plan, &l.err);
    if (l.skel || permission_denied(l.err)) break;
    std::string reason = take_reason();
    if (reason.empty()) reason = errstr(l.err);
    const char* what = !a.raw_tp ? "tp_btf" : a.optional ? "raw_tp" : "raw_tp without epoll/usdt";
    l.reasons += std::string(l.reasons.empty() ? "" : "; ") + what + ": " + reason;
  }
  return l;
}

OpenFailure load_failure(const Loaded& l, bool verbose) {
  if (permission_denied(l.err)) return {OpenError::permission, need_root("loading the programs", l.err)};
  return {OpenError::unsupported, "the BPF programs do not load on this kernel (" + l.reasons + ")" +
                                      (verbose ? "" : "; --verbose shows libbpf's log")};
}

// What the loaded attempt gave up, for notes().
std::vector<std::string> load_notes(Loaded& l, const KernelFeatures& kf, const CollectorOptions& o) {
  std::vector<std::string> notes;
  if (!l.reasons.empty())
    notes.push_back("bpf: " + l.reasons + "; using " +
                    (l.attempt.optional ? "raw_tp" : "raw_tp without epoll and usdt (lacks: io, drain)"));
  else if (!kf.tp_btf && !o.force_raw_tp)
    notes.push_back("bpf: kernel has no BTF-typed tracepoints (5.5+): using raw_tp");
  for (auto& n : l.plan.notes) notes.push_back(std::move(n));
  return notes;
}

}  // namespace

std::unique_ptr<Collector::Impl> Collector::Impl::create(const CollectorOptions& o, OpenFailure* f) {
  auto fail = [f](OpenError k, std::string m) {
    *f = {k, std::move(m)};
    return nullptr;
  };
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return fail(OpenError::no_btf, "kernel has no BTF (/sys/kernel/btf/vmlinux): use --procfs");
  for (pid_t pid : o.pids)
    if (!process_exists(pid)) return fail(OpenError::no_such_process, "no such process: " + std::to_string(pid));
  if (o.pids.empty() && o.comm.empty() && !o.all && o.cgroup_dir.empty())
    return fail(OpenError::other, "no target: give pids, a comm, a cgroup or all");

  auto impl = std::make_unique<Impl>();
  impl->opts = o;
  impl->comm = o.comm.substr(0, PLATOON_COMM_LEN - 1);
  impl->ncpus = std::max(1, libbpf_num_possible_cpus());

  std::string tracefs_error;
  const std::string events_dir = ensure_tracefs(&tracefs_error);
  if (events_dir.empty()) impl->notes.push_back("epoll: " + tracefs_error + "; epoll is not traced");

  const Injected inject = injected_failures();
  const KernelFeatures kf = probe_features(inject);
  if (!kf.boot_clock)
    return fail(OpenError::unsupported, "kernel lacks bpf_ktime_get_boot_ns (5.8+), the programs' clock");

  Loaded loaded = load_with_fallback(o, impl->comm, kf, inject, events_dir);
  if (!loaded.skel) {
    *f = load_failure(loaded, o.verbose);
    return nullptr;
  }
  for (auto& n : load_notes(loaded, kf, o)) impl->notes.push_back(std::move(n));
  impl->fields = loaded.plan.fields;
  // Without the kernel's IRQ time the irq part of a wait would read 0 however long interrupts
  // held the CPU: the source says it lacks the part rather than show a 0 that looks measured.
  if (!kf.irq_time) {
    impl->fields &= ~model::kFieldWaitIrq;
    impl->notes.push_back("irq wait: not measured, the kernel does not account IRQ time (CONFIG_IRQ_TIME_ACCOUNTING)");
  }
  impl->usdt = loaded.plan.usdt;
  impl->skel = std::move(loaded.skel);
  impl->raw_tp = loaded.attempt.raw_tp;
  impl->entries.emplace(impl->skel.get(), loaded.plan.task_storage);
  impl->pairs.emplace(bpf_map__fd(impl->skel->maps.pairs), o.pairs_max, o.pair_idle_s);
  if (!impl->attach(loaded.plan.events, f)) return nullptr;
  return impl;
}

// Targets the given pids, attaches the programs and, when recording, opens the ring buffer.
bool Collector::Impl::attach(bool events, OpenFailure* f) {
  for (pid_t pid : opts.pids)
    if (!target(pid)) return *f = {OpenError::other, "cannot add target " + std::to_string(pid) + ": target map full"}, false;
  if (const int err = platoon_bpf__attach(skel.get())) {
    if (err == -EPERM) return *f = {OpenError::permission, need_root("attaching the programs", err)}, false;
    return *f = {OpenError::other, "cannot attach the BPF programs: " + errstr(err)}, false;
  }
  if (events) {
    ring.reset(ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, this, nullptr));
    if (!ring) return *f = {OpenError::other, "cannot open the ring buffer: " + errstr(errno)}, false;
    enable_stages();
  }
  return true;
}

// Staged records (bpf/stage.bpf.h) need flush_stages run on every CPU at each poll; only when
// the kernel can (BPF_F_TEST_RUN_ON_CPU, 5.10) are they switched on.
void Collector::Impl::enable_stages() {
  online_cpus = read_online_cpus();  // never empty
  if (const int err = flush_stage_on(online_cpus.front())) {
    notes.push_back("events: each record goes to the ring buffer on its own (cannot run a program on a given CPU: " +
                    errstr(err) + "; 5.10+)");
    return;
  }
  skel->bss->stage_on = true;
}

int Collector::Impl::flush_stage_on(int cpu) {
  LIBBPF_OPTS(bpf_test_run_opts, run, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = static_cast<__u32>(cpu));
  return bpf_prog_test_run_opts(bpf_program__fd(skel->progs.flush_stages), &run);
}

void Collector::Impl::flush_stages() {
  if (!skel->bss->stage_on) return;
  for (int cpu : online_cpus) flush_stage_on(cpu);  // a CPU gone offline has nothing staged we could fetch
}

std::unique_ptr<Collector> Collector::open(const CollectorOptions& opts, OpenError* kind,
                                           std::string* message) {
  if (kind) *kind = OpenError::none;
  g_verbose.store(opts.verbose);
  libbpf_set_print(libbpf_print);
  OpenFailure failure;
  std::unique_ptr<Impl> impl = Impl::create(opts, &failure);
  if (!impl) {
    if (kind) *kind = failure.kind;
    if (message) *message = std::move(failure.message);
    return nullptr;
  }

  std::unique_ptr<Collector> c(new Collector(std::move(impl)));
  Impl& im = *c->impl_;
  if (!im.comm.empty()) c->rescan_comm();  // attaches the probes of what it adds
  if (!opts.cgroup_dir.empty()) im.sync_cgroup(*c);
  if (opts.all && im.usdt)
    im.notes.push_back("usdt: runtime probes are not attached in whole-machine mode (watch a pid for drain data)");
  std::vector<pid_t> watched = opts.pids;
  // Following forks covers the process tree that exists now as well as what it forks later.
  if (opts.follow_forks)
    for (pid_t pid : descendants_of(opts.pids)) {
      if (im.target(pid)) watched.push_back(pid);
      else im.notes.push_back("target map full: pid " + std::to_string(pid) + " is not watched");
    }
  if (im.usdt)
    for (pid_t pid : watched) im.attach_usdt(pid);
  im.seed();
  return c;
}

Collector::Collector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Collector::~Collector() {
  // Links and the ring buffer go before the skeleton that owns their programs and maps.
  if (impl_) {
    impl_->ring.reset();
    impl_->usdt_links.clear();
    impl_->stats_tables.clear();
  }
}

bool Collector::Impl::target(pid_t pid) {
  const __u32 key = static_cast<__u32>(pid);
  const __u8 one = 1;
  // The programs test the bitmap mirror of `targets` (target_bits in targets.bpf.h). As
  // there, only the insert that succeeds sets the bit, with an add.
  if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &key, &one, BPF_NOEXIST) == 0) {
    constexpr size_t kWords = sizeof skel->bss->target_bits / sizeof skel->bss->target_bits[0];
    if (key / 64 < kWords) __atomic_fetch_add(&skel->bss->target_bits[key / 64], __u64{1} << (key % 64), __ATOMIC_RELAXED);
  } else if (errno != EEXIST) {
    return false;
  }
  pids.insert(pid);
  return true;
}

void Collector::Impl::attach_usdt(pid_t pid) {
  const std::string exe = exe_path(pid);
  usdt_exe[pid] = exe;
  RuntimeProbes r = attach_runtime_probes(skel.get(), pid, exe, ring && opts.drain_events);
  for (auto& l : r.links) usdt_links.emplace_back(l.release());
  for (auto& n : r.notes) notes.push_back(std::move(n));
  stats_tables.erase(pid);  // a new executable: a new table, or none
  if (r.table) stats_tables.emplace(pid, std::move(r.table));
}

void Collector::Impl::seed() {
  bpf_link* link = skel->links.seed_threads;
  if (!link) return;  // raw_tp mode: existing threads appear at their first event
  const int fd = bpf_iter_create(bpf_link__fd(link));
  if (fd < 0) {
    notes.push_back("seed: cannot run the task walk: " + errstr(errno));
    return;
  }
  char buf[256];
  while (read(fd, buf, sizeof buf) > 0) {
  }
  close(fd);
}

bool Collector::add_pid(pid_t tgid) {
  if (!process_exists(tgid)) return false;
  const bool known = impl_->pids.count(tgid) != 0;
  if (!impl_->target(tgid)) {
    impl_->notes.push_back("target map full: pid " + std::to_string(tgid) + " is not watched");
    return false;
  }
  if (!known && impl_->usdt) impl_->attach_usdt(tgid);
  impl_->seed();
  return true;
}

size_t Collector::rescan_comm() {
  if (impl_->comm.empty()) return 0;
  size_t added = 0;
  for (pid_t pid : pids_with_comm(impl_->comm)) {
    if (impl_->pids.count(pid)) continue;
    if (add_pid(pid)) ++added;
  }
  return added;
}

void Collector::Impl::adopt_kernel_targets() {
  const int fd = bpf_map__fd(skel->maps.targets);
  __u32 key = 0, next = 0;
  const __u32* prev = nullptr;
  std::vector<pid_t> found;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    found.push_back(static_cast<pid_t>(next));
    key = next;
    prev = &key;
  }
  for (pid_t pid : found) {
    pids.insert(pid);
    if (!usdt) continue;
    // A forked child is found before or after its exec: look again once its executable changed.
    auto it = usdt_exe.find(pid);
    if (it == usdt_exe.end() || (it->second != exe_path(pid) && !exe_path(pid).empty())) attach_usdt(pid);
  }
}

bool Collector::drop_pid(pid_t tgid) {
  Impl& im = *impl_;
  const __u32 key = static_cast<__u32>(tgid);
  // As target(): only the delete that succeeds clears the bit.
  if (bpf_map_delete_elem(bpf_map__fd(im.skel->maps.targets), &key) == 0) {
    constexpr size_t kWords = sizeof im.skel->bss->target_bits / sizeof im.skel->bss->target_bits[0];
    if (key / 64 < kWords)
      __atomic_fetch_sub(&im.skel->bss->target_bits[key / 64], __u64{1} << (key % 64), __ATOMIC_RELAXED);
  } else if (!im.pids.count(tgid)) {
    return false;
  }
  im.pids.erase(tgid);
  im.usdt_exe.erase(tgid);
  im.stats_tables.erase(tgid);
  // Its threads leave the kernel map, so no snapshot reports them as the cgroup's any more.
  im.entries->forget_pid(key);
  return true;
}

// The --cgroup's members now: new ones become targets (a process moved in from outside; the
// kernel followed the forks), those that left are dropped.
void Collector::Impl::sync_cgroup(Collector& c) {
  const std::vector<pid_t> now = cgroup_members(opts.cgroup_dir);
  std::vector<pid_t> left;
  for (pid_t p : pids)
    if (!std::binary_search(now.begin(), now.end(), p)) left.push_back(p);
  for (pid_t p : left) c.drop_pid(p);
  for (pid_t p : now)
    if (!pids.count(p)) c.add_pid(p);
}

void Collector::refresh() {
  rescan_comm();
  if (!impl_->opts.cgroup_dir.empty()) {
    impl_->adopt_kernel_targets();   // forked children, before they are checked against the group
    impl_->sync_cgroup(*this);
  }
  if (impl_->opts.follow_forks || !impl_->comm.empty()) impl_->adopt_kernel_targets();
  impl_->pairs->age(impl_->pairs->read(), boottime_ns());
}

size_t Collector::pairs_in_kernel() const { return impl_->pairs->read().size(); }

uint32_t Collector::fields() const { return impl_->fields; }

const char* Collector::attach_mode() const { return impl_->raw_tp ? "raw_tp" : "tp_btf"; }

const char* Collector::thread_store() const { return impl_->entries->in_task_storage() ? "task storage" : "hash"; }

std::vector<std::string> Collector::notes() const { return impl_->notes; }

namespace {

// One kernel entry as a sample. The field list's quantities carry the same names in the
// kernel's struct: they are copied by the list; per-CPU arrays keep the first `cpus` slots.
model::ThreadSample thread_sample(const platoon_thread_stats& v, uint64_t now, int cpus) {
  model::ThreadSample t;
  t.tid = v.tid;
  t.pid = v.pid;
  t.comm.assign(v.comm, strnlen(v.comm, sizeof v.comm));
  if (t.comm.empty()) t.comm = thread_comm(static_cast<pid_t>(v.pid), static_cast<pid_t>(v.tid));
  t.exited = v.exited != 0;
  t.first_seen_ns = v.first_seen_ns;
  t.last_cpu = v.last_cpu;
#define PLATOON_COPY_U64(name) t.name = v.name;
#define PLATOON_COPY_HIST(name, slots)                                           \
  static_assert(sizeof v.name == sizeof t.name, #name ": kernel and model slots differ"); \
  std::copy(std::begin(v.name), std::end(v.name), t.name.begin());
#define PLATOON_COPY_PER_CPU(name) t.name.assign(v.name, v.name + cpus);
  PLATOON_THREAD_FIELDS(PLATOON_COPY_U64, PLATOON_COPY_U64, PLATOON_COPY_HIST, PLATOON_COPY_PER_CPU)
#undef PLATOON_COPY_U64
#undef PLATOON_COPY_HIST
#undef PLATOON_COPY_PER_CPU
  // The interval in progress counts up to now, so a thread that never switches (a spinner
  // alone on its CPU) still shows its time. The copy may be torn against a concurrent
  // update; the start <= now check keeps a torn read from adding garbage. Some switches away
  // never reach the tracepoint (seen here for a few tasks of the VM's agent: their switch-ins
  // arrive, their switch-outs do not; bpftrace sees the same), which would leave on_cpu set
  // while the thread sleeps: an open run is only counted for a thread /proc says is running.
  if (!t.exited && v.on_cpu && v.run_start_ns && v.run_start_ns <= now &&
      thread_running(static_cast<pid_t>(v.pid), static_cast<pid_t>(v.tid)))
    t.run_ns += now - v.run_start_ns;
  if (!t.exited && v.runnable && v.wait_start_ns && v.wait_start_ns <= now) {
    const uint64_t waiting = now - v.wait_start_ns;
    t.wait_ns += waiting;
    // A wait whose cause is known when it starts (a throttled group: a parked thread can wait
    // a whole period) counts as that cause while in progress too; steal and irq shares need
    // the end, so they are booked then.
    if (v.wait_flags & PLATOON_WAIT_THROTTLED) t.wait_throttled_ns += waiting;
    else if (v.wait_flags & PLATOON_WAIT_IDLE_CPU) t.wait_idle_exit_ns += waiting;
  }
  if (v.epoll_enter_ns && v.epoll_enter_ns <= now && !t.exited) t.io_blocked_ns += now - v.epoll_enter_ns;
  return t;
}

}  // namespace

// Exited threads have now been reported: their entries (and pairs, here and aged) go.
void Collector::Impl::forget_exited(const std::unordered_set<__u32>& exited, const KernelPairs& kernel_pairs) {
  entries->forget_exited(exited);
  pairs->forget(exited, kernel_pairs);
}

// Losses: the per-CPU drop counters, summed over CPUs except the ring buffer's (per CPU).
void Collector::Impl::read_losses(model::Snapshot& snap) const {
  std::vector<uint64_t> per_cpu(static_cast<size_t>(ncpus));
  snap.lost_events_per_cpu.assign(static_cast<size_t>(ncpus), 0);
  for (__u32 kind = 0; kind < PLATOON_DROP_KINDS; ++kind) {
    std::fill(per_cpu.begin(), per_cpu.end(), 0);
    if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.drops), &kind, per_cpu.data()) != 0) continue;
    uint64_t sum = 0;
    for (uint64_t n : per_cpu) sum += n;
    switch (kind) {
      case PLATOON_DROP_RINGBUF: snap.lost_events_per_cpu = per_cpu; break;
      case PLATOON_DROP_THREADS: snap.untracked_threads = sum; break;
      case PLATOON_DROP_PAIRS: snap.lost_pairs = sum; break;
      case PLATOON_DROP_TARGETS: snap.lost_targets = sum; break;
      default: break;
    }
  }
}

model::Snapshot Collector::snapshot() {
  model::Snapshot snap;
  snap.source = model::Source::bpf;
  snap.fields = impl_->fields;

  // Copy every entry first, then take the clock: every in-flight start is then <= now.
  std::string walk_error;
  const std::vector<platoon_thread_stats> values = impl_->entries->read(&walk_error);
  if (!walk_error.empty() && impl_->notes.size() < 64 &&
      std::find(impl_->notes.begin(), impl_->notes.end(), walk_error) == impl_->notes.end())
    impl_->notes.push_back(walk_error);
  const KernelPairs pair_values = impl_->pairs->read();
  const uint64_t now = boottime_ns();
  snap.ts_ns = now;

  const int cpus = std::min({impl_->ncpus, PLATOON_MAX_CPUS, static_cast<int>(impl_->opts.cpu_slots)});
  std::unordered_set<__u32> exited;
  snap.threads.reserve(values.size());
  for (const platoon_thread_stats& v : values) {
    snap.threads.push_back(thread_sample(v, now, cpus));
    if (snap.threads.back().exited) exited.insert(v.tid);
  }
  std::sort(snap.threads.begin(), snap.threads.end(),
            [](const model::ThreadSample& a, const model::ThreadSample& b) { return a.tid < b.tid; });

  for (auto& [pid, table] : impl_->stats_tables) table->fill(snap.threads);
  impl_->pairs->append(snap, pair_values);
  impl_->forget_exited(exited, pair_values);
  impl_->pairs->age(pair_values, now);
  impl_->read_losses(snap);
  impl_->context.fill(snap);
  return snap;
}

int Collector::poll_events(int timeout_ms, const std::function<void(const void*, size_t)>& sink) {
  if (!impl_->ring) return 0;
  impl_->sink = &sink;
  impl_->polled = 0;
  // The programs wake us only when the buffer is a quarter full (targ_wakeup_bytes): the wait
  // is mostly a plain timeout, after which every CPU's staged records are moved into the ring
  // and whatever arrived is consumed. The wait is capped so that a quiet CPU's last records
  // reach the reader within kStageFlushMs (the readers' reorder horizon counts on it).
  constexpr int kStageFlushMs = 25;
  int rc = timeout_ms == 0 ? 0 : ring_buffer__poll(impl_->ring.get(), std::min(timeout_ms, kStageFlushMs));
  impl_->flush_stages();
  if (rc >= 0 || rc == -EINTR) rc = ring_buffer__consume(impl_->ring.get());
  impl_->sink = nullptr;
  if (rc < 0 && rc != -EINTR && rc != -ECANCELED) return rc;
  return static_cast<int>(impl_->polled);
}

std::vector<Collector::ProgramStats> Collector::program_stats() const {
  std::vector<ProgramStats> out;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, impl_->skel->obj) {
    const int fd = bpf_program__fd(prog);
    if (fd < 0) continue;
    bpf_prog_info info{};
    __u32 len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
    out.push_back({bpf_program__name(prog), info.run_cnt, info.run_time_ns, info.recursion_misses});
  }
  return out;
}

}  // namespace platoon::bpf
