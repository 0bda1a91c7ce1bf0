// Reading the maps: a snapshot of every thread entry and pair with the drop counters, the
// ring buffer's records, and what the programs cost.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bpf/collectors/collector_impl.hpp"
#include "bpf/collectors/system.hpp"
#include "bpf/platoon.h"
#include "bpf/snapshot/clock.hpp"
#include "platoon.skel.h"

namespace platoon::collectors {

using snapshot::boottime_ns;

int Collector::Impl::on_record(void* ctx, void* data, size_t size) {
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

namespace {

// One kernel entry as a sample. The field list's quantities carry the same names in the
// kernel's struct: they are copied by the list; per-CPU arrays keep the first `cpus` slots.
snapshot::ThreadSample thread_sample(const platoon_thread_stats& v, uint64_t now, int cpus) {
  snapshot::ThreadSample t;
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
void Collector::Impl::read_losses(snapshot::Snapshot& snap) const {
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
      case PLATOON_DROP_REQUESTS: snap.lost_requests = sum; break;
      default: break;
    }
  }
}

snapshot::Snapshot Collector::snapshot() {
  snapshot::Snapshot snap;
  snap.source = snapshot::Source::bpf;
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
            [](const snapshot::ThreadSample& a, const snapshot::ThreadSample& b) { return a.tid < b.tid; });

  for (auto& [pid, table] : impl_->stats_tables) table->fill(snap.threads);
  impl_->pairs->append(snap, pair_values);
  impl_->forget_exited(exited, pair_values);
  impl_->pairs->age(pair_values, now);
  impl_->read_losses(snap);
  impl_->context.fill(snap);
  if (impl_->requests) {
    impl_->requests->drain();
    impl_->requests->fill(snap);
  }
  return snap;
}

int Collector::poll_events(int timeout_ms, const std::function<void(const void*, size_t)>& sink) {
  size_t requests = 0;
  if (impl_->requests) {
    impl_->requests->drain();
    requests = impl_->requests->hand_over(sink);
  }
  if (!impl_->ring) return static_cast<int>(requests);
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
  return static_cast<int>(impl_->polled + requests);
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

size_t Collector::pairs_in_kernel() const { return impl_->pairs->read().size(); }

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

}  // namespace platoon::collectors
