#include "bpf/collector.hpp"

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
#include <unordered_set>

#include "bpf/platoon.h"
#include "bpf/system.hpp"
#include "platoon.skel.h"

namespace platoon::bpf {

uint64_t boottime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

// libbpf's print callback is process-wide; its debug chatter (and the warnings of a failed
// attempt we recover from, like a tp_btf load before the raw_tp fallback) only with verbose.
std::atomic<bool> g_verbose{false};

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  (void)level;
  if (!g_verbose.load(std::memory_order_relaxed)) return 0;
  return std::vfprintf(stderr, fmt, args);
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

struct UsdtProbe {
  const char* name;
  bpf_program* prog;
};

std::vector<UsdtProbe> usdt_probes(platoon_bpf* s) {
  auto& p = s->progs;
  // Not poll, drain_start or drain_end: a uprobe hit costs a trap, and `drain` carries what
  // the three would (the epoll syscalls give the I/O side).
  return {{"drain", p.usdt_drain}, {"steal", p.usdt_steal}};
}

size_t round_ringbuf(size_t bytes) {
  // A ring buffer's size is a power of two and a multiple of the page size.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t n = page;
  while (n < bytes && n < (size_t{1} << 31)) n <<= 1;
  return n;
}

std::string errstr(int err) { return std::strerror(err < 0 ? -err : err); }

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

  static int on_record(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    // No exception may cross libbpf's C frames: a throwing sink stops this poll.
    try {
      if (self->sink) (*self->sink)(data, size);
      ++self->polled;
      return 0;
    } catch (...) {
      return -ECANCELED;
    }
  }

  void attach_usdt(pid_t pid);
  void seed();
  bool target(pid_t pid);
};

namespace {

// Opens and loads the skeleton in one attach mode. On failure returns nullptr and the
// libbpf error (negative errno).
SkelPtr load_skeleton(const CollectorOptions& o, const std::string& comm, bool raw_tp,
                      bool have_tracefs, const std::string& events_dir,
                      std::vector<std::string>* notes, int* err) {
  SkelPtr skel(platoon_bpf__open());
  if (!skel) {
    *err = -errno;
    return nullptr;
  }
  skel->rodata->targ_events = o.record_events;
  skel->rodata->targ_wakeup_bytes = std::max<uint64_t>(o.ringbuf_bytes / 4, 1);
  skel->rodata->targ_comm_set = !comm.empty();
  std::memset(skel->rodata->targ_comm, 0, sizeof skel->rodata->targ_comm);
  std::memcpy(skel->rodata->targ_comm, comm.data(), std::min(comm.size(), sizeof skel->rodata->targ_comm - 1));
  // Without recording the ring buffer is never written: keep it one page.
  bpf_map__set_max_entries(skel->maps.events,
                           static_cast<uint32_t>(round_ringbuf(o.record_events ? o.ringbuf_bytes : 1)));

  for (const HookPair& h : hook_pairs(skel.get())) {
    bpf_program__set_autoload(h.btf, !raw_tp);
    bpf_program__set_autoload(h.raw, raw_tp);
  }
  // The attach-time task walk is a tracing program too: only with tp_btf.
  bpf_program__set_autoload(skel->progs.seed_threads, !raw_tp);
  for (const EpollHook& e : epoll_hooks(skel.get())) {
    const bool present = have_tracefs && access((events_dir + "/syscalls/sys_enter_" + e.syscall).c_str(), F_OK) == 0;
    bpf_program__set_autoload(e.enter, present);
    bpf_program__set_autoload(e.exit, present);
    if (!present && notes)
      notes->push_back(std::string("epoll: no tracepoint for ") + e.syscall + (have_tracefs ? "" : " (no tracefs)"));
  }
  for (const UsdtProbe& u : usdt_probes(skel.get())) bpf_program__set_autoload(u.prog, o.attach_usdt);

  *err = platoon_bpf__load(skel.get());
  if (*err) return nullptr;
  return skel;
}

}  // namespace

std::unique_ptr<Collector> Collector::open(const CollectorOptions& opts, OpenError* kind,
                                           std::string* message) {
  auto fail = [&](OpenError k, std::string m) -> std::unique_ptr<Collector> {
    if (kind) *kind = k;
    if (message) *message = std::move(m);
    return nullptr;
  };
  if (kind) *kind = OpenError::none;
  g_verbose.store(opts.verbose);
  libbpf_set_print(libbpf_print);

  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return fail(OpenError::no_btf, "kernel has no BTF (/sys/kernel/btf/vmlinux): use --procfs");
  for (pid_t pid : opts.pids)
    if (!process_exists(pid)) return fail(OpenError::no_such_process, "no such process: " + std::to_string(pid));
  if (opts.pids.empty() && opts.comm.empty())
    return fail(OpenError::other, "no target: give pids or a comm");

  auto impl = std::make_unique<Impl>();
  impl->opts = opts;
  impl->comm = opts.comm.substr(0, PLATOON_COMM_LEN - 1);
  impl->ncpus = std::max(1, libbpf_num_possible_cpus());

  std::string tracefs_error;
  const std::string events_dir = ensure_tracefs(&tracefs_error);
  if (events_dir.empty()) impl->notes.push_back("epoll: " + tracefs_error + "; epoll is not traced");

  int err = 0;
  bool raw_tp = opts.force_raw_tp;
  SkelPtr skel = load_skeleton(opts, impl->comm, raw_tp, !events_dir.empty(), events_dir, &impl->notes, &err);
  if (!skel && !raw_tp && err != -EPERM) {
    // tp_btf needs BPF trampolines (BPF_PROG_TYPE_TRACING); raw_tp works where they don't.
    impl->notes.push_back("tp_btf failed to load (" + errstr(err) + "): using raw_tp");
    raw_tp = true;
    skel = load_skeleton(opts, impl->comm, raw_tp, !events_dir.empty(), events_dir, nullptr, &err);
  }
  if (!skel) {
    if (err == -EPERM || (err == -EACCES && geteuid() != 0))
      return fail(OpenError::permission, "BPF needs root or CAP_BPF+CAP_PERFMON: run as root, or use --procfs");
    return fail(OpenError::other, "cannot load the BPF programs: " + errstr(err) +
                                      (opts.verbose ? "" : " (run with --verbose for libbpf's log)"));
  }
  impl->skel = std::move(skel);
  impl->raw_tp = raw_tp;

  for (pid_t pid : opts.pids)
    if (!impl->target(pid)) return fail(OpenError::other, "cannot add target " + std::to_string(pid) + ": target map full");

  err = platoon_bpf__attach(impl->skel.get());
  if (err) {
    if (err == -EPERM) return fail(OpenError::permission, "BPF needs root or CAP_BPF+CAP_PERFMON: run as root, or use --procfs");
    return fail(OpenError::other, "cannot attach the BPF programs: " + errstr(err));
  }
  if (opts.record_events) {
    impl->ring.reset(ring_buffer__new(bpf_map__fd(impl->skel->maps.events), Impl::on_record, impl.get(), nullptr));
    if (!impl->ring) return fail(OpenError::other, "cannot open the ring buffer: " + errstr(errno));
  }

  std::unique_ptr<Collector> c(new Collector(std::move(impl)));
  if (!c->impl_->comm.empty()) c->rescan_comm();
  if (c->impl_->opts.attach_usdt)
    for (pid_t pid : c->impl_->opts.pids) c->impl_->attach_usdt(pid);
  c->impl_->seed();
  return c;
}

Collector::Collector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Collector::~Collector() {
  // Links and the ring buffer go before the skeleton that owns their programs and maps.
  if (impl_) {
    impl_->ring.reset();
    impl_->usdt_links.clear();
  }
}

bool Collector::Impl::target(pid_t pid) {
  const __u32 key = static_cast<__u32>(pid);
  const __u8 one = 1;
  if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &key, &one, BPF_ANY) != 0) return false;
  // The programs test the bitmap mirror of `targets` (see target_bits in platoon.bpf.c).
  constexpr size_t kWords = sizeof skel->bss->target_bits / sizeof skel->bss->target_bits[0];
  if (key / 64 < kWords) __atomic_fetch_or(&skel->bss->target_bits[key / 64], __u64{1} << (key % 64), __ATOMIC_RELAXED);
  pids.insert(pid);
  return true;
}

void Collector::Impl::attach_usdt(pid_t pid) {
  const std::string exe = exe_path(pid);
  // Attach through /proc/PID/exe: it names the right file even when the target lives in
  // another mount namespace or its binary was replaced on disk.
  const std::string path = "/proc/" + std::to_string(pid) + "/exe";
  int attached = 0;
  int first_err = 0;
  for (const UsdtProbe& u : usdt_probes(skel.get())) {
    bpf_link* link = bpf_program__attach_usdt(u.prog, pid, path.c_str(), "platoon", u.name, nullptr);
    if (!link) {
      if (!first_err) first_err = -errno;
      continue;
    }
    usdt_links.emplace_back(link);
    ++attached;
  }
  const std::string who = (exe.empty() ? path : exe) + " (pid " + std::to_string(pid) + ")";
  if (attached == 0 && (first_err == -ENOENT || first_err == -ESRCH))
    notes.push_back("usdt: no platoon probes in " + who);
  else if (attached == 0)
    notes.push_back("usdt: cannot attach to " + who + ": " + errstr(first_err));
  else
    notes.push_back("usdt: attached " + std::to_string(attached) + " probes to " + who);
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
  if (!known && impl_->opts.attach_usdt) impl_->attach_usdt(tgid);
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

const char* Collector::attach_mode() const { return impl_->raw_tp ? "raw_tp" : "tp_btf"; }

std::vector<std::string> Collector::notes() const { return impl_->notes; }

model::Snapshot Collector::snapshot() {
  model::Snapshot snap;
  snap.source = model::Source::bpf;
  snap.fields = model::kFieldsBpf;
  platoon_bpf* s = impl_->skel.get();

  // Copy every entry first, then take the clock: every in-flight start is then <= now.
  std::vector<platoon_thread_stats> values;
  {
    const int fd = bpf_map__fd(s->maps.stats);
    __u32 key = 0, next = 0;
    const __u32* prev = nullptr;
    while (bpf_map_get_next_key(fd, prev, &next) == 0) {
      platoon_thread_stats v;
      if (bpf_map_lookup_elem(fd, &next, &v) == 0) values.push_back(v);
      key = next;
      prev = &key;
    }
  }
  std::vector<std::pair<platoon_pair_key, platoon_pair_value>> pair_values;
  {
    const int fd = bpf_map__fd(s->maps.pairs);
    platoon_pair_key key{}, next{};
    const platoon_pair_key* prev = nullptr;
    while (bpf_map_get_next_key(fd, prev, &next) == 0) {
      platoon_pair_value v;
      if (bpf_map_lookup_elem(fd, &next, &v) == 0) pair_values.emplace_back(next, v);
      key = next;
      prev = &key;
    }
  }
  const uint64_t now = boottime_ns();
  snap.ts_ns = now;

  std::unordered_set<__u32> exited;
  snap.threads.reserve(values.size());
  for (const platoon_thread_stats& v : values) {
    model::ThreadSample t;
    t.tid = v.tid;
    t.pid = v.pid;
    t.comm.assign(v.comm, strnlen(v.comm, sizeof v.comm));
    if (t.comm.empty()) t.comm = thread_comm(static_cast<pid_t>(v.pid), static_cast<pid_t>(v.tid));
    t.exited = v.exited != 0;
    t.first_seen_ns = v.first_seen_ns;
    t.last_cpu = v.last_cpu;
    t.run_ns = v.run_ns;
    t.wait_ns = v.wait_ns;
    // The interval in progress counts up to now, so a thread that never switches (a spinner
    // alone on its CPU) still shows its time. The copy may be torn against a concurrent
    // update; the start <= now check keeps a torn read from adding garbage.
    if (!t.exited && v.on_cpu && v.run_start_ns && v.run_start_ns <= now) t.run_ns += now - v.run_start_ns;
    if (!t.exited && v.runnable && v.wait_start_ns && v.wait_start_ns <= now) t.wait_ns += now - v.wait_start_ns;
    t.switches_voluntary = v.switches_voluntary;
    t.switches_involuntary = v.switches_involuntary;
    t.switch_ins = v.switch_ins;
    t.migrations = v.migrations;
    t.wakeups = v.wakeups;
    t.runq_max_ns = v.runq_max_ns;
    std::copy(std::begin(v.runq_hist), std::end(v.runq_hist), t.runq_hist.begin());
    const int cpus = std::min(impl_->ncpus, PLATOON_MAX_CPUS);
    t.cpu_switch_ins.assign(v.cpu_switch_ins, v.cpu_switch_ins + cpus);
    t.io_cycles = v.io_cycles;
    t.io_events = v.io_events;
    t.io_blocked_ns = v.io_blocked_ns;
    if (v.epoll_enter_ns && v.epoll_enter_ns <= now && !t.exited) t.io_blocked_ns += now - v.epoll_enter_ns;
    std::copy(std::begin(v.io_events_hist), std::end(v.io_events_hist), t.io_events_hist.begin());
    t.drains = v.drains;
    t.drain_depth_sum = v.drain_depth_sum;
    std::copy(std::begin(v.drain_depth_hist), std::end(v.drain_depth_hist), t.drain_depth_hist.begin());
    t.drain_fibers_run = v.drain_fibers_run;
    t.drain_ns = v.drain_ns;
    t.steals = v.steals;
    t.stolen_fibers = v.stolen_fibers;
    t.polls = v.polls;
    t.poll_events = v.poll_events;
    if (t.exited) exited.insert(v.tid);
    snap.threads.push_back(std::move(t));
  }
  std::sort(snap.threads.begin(), snap.threads.end(),
            [](const model::ThreadSample& a, const model::ThreadSample& b) { return a.tid < b.tid; });

  snap.pairs.reserve(pair_values.size());
  for (const auto& [k, v] : pair_values) {
    model::PairSample p;
    p.tid = k.tid;
    p.kind = static_cast<model::PairKind>(k.kind);
    p.other_tid = k.other;
    p.other_pid = v.other_pid;
    p.other_comm.assign(v.other_comm, strnlen(v.other_comm, sizeof v.other_comm));
    p.count = v.count;
    p.ns = v.ns;
    snap.pairs.push_back(std::move(p));
  }

  // Exited threads have now been reported: their entries (and pairs) go.
  for (__u32 tid : exited) bpf_map_delete_elem(bpf_map__fd(s->maps.stats), &tid);
  if (!exited.empty())
    for (const auto& [k, v] : pair_values)
      if (exited.count(k.tid)) bpf_map_delete_elem(bpf_map__fd(s->maps.pairs), &k);

  // Losses: the per-CPU drop counters, summed over CPUs except the ring buffer's (per CPU).
  std::vector<uint64_t> per_cpu(static_cast<size_t>(impl_->ncpus));
  snap.lost_events_per_cpu.assign(static_cast<size_t>(impl_->ncpus), 0);
  for (__u32 kind = 0; kind < PLATOON_DROP_KINDS; ++kind) {
    std::fill(per_cpu.begin(), per_cpu.end(), 0);
    if (bpf_map_lookup_elem(bpf_map__fd(s->maps.drops), &kind, per_cpu.data()) != 0) continue;
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
  return snap;
}

int Collector::poll_events(int timeout_ms, const std::function<void(const void*, size_t)>& sink) {
  if (!impl_->ring) return 0;
  impl_->sink = &sink;
  impl_->polled = 0;
  // The programs wake us only when the buffer is a quarter full (targ_wakeup_bytes): the wait
  // is mostly a plain timeout, after which whatever arrived is consumed.
  int rc = timeout_ms == 0 ? 0 : ring_buffer__poll(impl_->ring.get(), timeout_ms);
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
