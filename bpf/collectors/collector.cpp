#include "bpf/collectors/collector.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "bpf/collectors/collector_impl.hpp"
#include "bpf/collectors/system.hpp"
#include "platoon.skel.h"

namespace platoon::collectors {

std::unique_ptr<Collector> Collector::open(const CollectorOptions& opts, OpenError* kind,
                                           std::string* message) {
  if (kind) *kind = OpenError::none;
  capture_libbpf_output(opts.verbose);
  OpenFailure failure;
  std::unique_ptr<Impl> impl = Impl::load(opts, &failure);
  if (impl && impl->attach(&failure) && impl->adopt_targets(&failure)) {
    impl->seed();
    return std::unique_ptr<Collector>(new Collector(std::move(impl)));
  }
  if (kind) *kind = failure.kind;
  if (message) *message = std::move(failure.message);
  return nullptr;
}

// Checks what open() needs before any BPF, probes the kernel, and loads the richest program set
// it takes (load_plan.hpp).
std::unique_ptr<Collector::Impl> Collector::Impl::load(const CollectorOptions& o, OpenFailure* f) {
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
  impl->ncpus = std::max(1, libbpf_num_possible_cpus());
  std::string tracefs_error;
  const std::string events_dir = ensure_tracefs(&tracefs_error);
  if (events_dir.empty()) impl->notes.push_back("epoll: " + tracefs_error + "; epoll is not traced");
  const LoadInputs in = probe_load_inputs(events_dir);
  if (!in.kernel.boot_clock)
    return fail(OpenError::unsupported, "kernel lacks bpf_ktime_get_boot_ns (5.8+), the programs' clock");

  Loaded loaded = load_with_fallback(o, in);
  if (!loaded.skel) return fail(loaded.error_kind(), loaded.error_message(o.verbose));
  for (auto& n : loaded.notes(o, in.kernel)) impl->notes.push_back(std::move(n));
  const LoadPlan& plan = loaded.plan;
  impl->fields = plan.fields;
  // Without the kernel's IRQ time the irq part of a wait would read 0 however long interrupts
  // held the CPU: the source says it lacks the part rather than show a 0 that looks measured.
  if (!in.kernel.irq_time) {
    impl->fields &= ~snapshot::kFieldWaitIrq;
    impl->notes.push_back("irq wait: not measured, the kernel does not account IRQ time (CONFIG_IRQ_TIME_ACCOUNTING)");
  }
  impl->usdt = plan.usdt;
  impl->requests_planned = plan.requests;
  impl->events = plan.knobs.events;
  impl->comm = plan.knobs.comm;
  impl->raw_tp = plan.attempt.raw_tp;
  impl->skel = std::move(loaded.skel);
  impl->entries.emplace(impl->skel.get(), plan.knobs.task_storage);
  impl->pairs.emplace(bpf_map__fd(impl->skel->maps.pairs), o.pairs_max, o.pair_idle_s);
  return impl;
}

// Attaches the programs and, when recording, opens the ring buffer.
bool Collector::Impl::attach(OpenFailure* f) {
  if (const int err = platoon_bpf__attach(skel.get())) {
    if (err == -EPERM) return *f = {OpenError::permission, need_root("attaching the programs", err)}, false;
    return *f = {OpenError::other, "cannot attach the BPF programs: " + errstr(err)}, false;
  }
  if (events) {
    ring.reset(ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, this, nullptr));
    if (!ring) return *f = {OpenError::other, "cannot open the ring buffer: " + errstr(errno)}, false;
    enable_stages();
  }
  if (requests_planned) {
    requests.emplace(bpf_map__fd(skel->maps.request_ring), opts.record_events);
    if (!requests->ok()) return *f = {OpenError::other, requests->error()}, false;
  }
  return true;
}

Collector::Collector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// Impl's members go in the reverse of their order: links and the ring buffer before the
// skeleton that owns their programs and maps.
Collector::~Collector() = default;

uint32_t Collector::fields() const { return impl_->fields; }

const char* Collector::attach_mode() const { return impl_->raw_tp ? "raw_tp" : "tp_btf"; }

const char* Collector::thread_store() const { return impl_->entries->in_task_storage() ? "task storage" : "hash"; }

std::vector<std::string> Collector::notes() const { return impl_->notes; }

}  // namespace platoon::collectors
