// Which processes the collector watches: the kernel's target set (bpf/targets.bpf.h), filled
// from the options at open and kept up to date by refresh(), and the runtime probes attached to
// each target.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "bpf/collectors/cgroup_members.hpp"
#include "bpf/collectors/collector_impl.hpp"
#include "bpf/collectors/runtime_usdt.hpp"
#include "bpf/collectors/system.hpp"
#include "bpf/collectors/tcp_listeners.hpp"
#include "bpf/snapshot/clock.hpp"
#include "platoon.skel.h"

namespace platoon::collectors {

namespace {

// The programs test the bitmap mirror of `targets` (target_bits, bpf/targets.bpf.h). As there,
// only the caller whose insert or delete in `targets` succeeded flips a tgid's bit, with an
// atomic add: +1 sets the bit that was clear, -1 clears the bit that was set.
void flip_target_bit(platoon_bpf* skel, __u32 tgid, bool set) {
  constexpr size_t kWords = sizeof skel->bss->target_bits / sizeof skel->bss->target_bits[0];
  if (tgid / 64 >= kWords) return;
  const __u64 bit = __u64{1} << (tgid % 64);
  __atomic_fetch_add(&skel->bss->target_bits[tgid / 64], set ? bit : -bit, __ATOMIC_RELAXED);
}

std::string map_full(pid_t pid) { return "target map full: pid " + std::to_string(pid) + " is not watched"; }

}  // namespace

bool Collector::Impl::target(pid_t pid) {
  const __u32 key = static_cast<__u32>(pid);
  const __u8 one = 1;
  // Its listeners before its bit: a read the programs see from a target claims the connection,
  // and takes its side from the listeners known then.
  if (requests && !pids.count(pid)) seed_listeners(ports_listened_on(pid), key);
  if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &key, &one, BPF_NOEXIST) == 0) {
    flip_target_bit(skel.get(), key, true);
  } else if (errno != EEXIST) {
    return false;
  }
  pids.insert(pid);
  return true;
}

// Ports that were listening before the programs attached; later listen() calls they see.
void Collector::Impl::seed_listeners(const std::set<uint16_t>& ports, uint32_t owner) {
  for (const uint16_t port : ports) bpf_map_update_elem(bpf_map__fd(skel->maps.listen_ports), &port, &owner, BPF_ANY);
}

bool Collector::Impl::untarget(pid_t pid) {
  const __u32 key = static_cast<__u32>(pid);
  if (bpf_map_delete_elem(bpf_map__fd(skel->maps.targets), &key) == 0)
    flip_target_bit(skel.get(), key, false);
  else if (!pids.count(pid))
    return false;
  pids.erase(pid);
  usdt_exe.erase(pid);
  stats_tables.erase(pid);
  // Its threads leave the kernel map, so no snapshot reports them as the cgroup's any more.
  entries->forget_pid(key);
  return true;
}

bool Collector::Impl::watch(pid_t pid) {
  if (!process_exists(pid)) return false;
  const bool known = pids.count(pid) != 0;
  if (!target(pid)) {
    notes.push_back(map_full(pid));
    return false;
  }
  if (!known && usdt) attach_usdt(pid);
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

// The options' targets: the pids, the processes named --comm and the --cgroup's members now,
// and with follow_forks the pids' existing descendants; then the runtime probes of each.
bool Collector::Impl::adopt_targets(OpenFailure* f) {
  for (pid_t pid : opts.pids)
    if (!target(pid)) return *f = {OpenError::other, "cannot add target " + std::to_string(pid) + ": target map full"}, false;
  if (!comm.empty()) watch_comm_matches();  // attaches the probes of what it adds
  if (!opts.cgroup_dir.empty()) sync_cgroup();
  if (opts.all && usdt)
    notes.push_back("usdt: runtime probes are not attached in whole-machine mode (watch a pid for drain data)");
  // Whole machine: every listener of this network namespace, whoever owns it (0).
  if (opts.all && requests)
    seed_listeners(all_listening_ports(), 0);
  std::vector<pid_t> watched = opts.pids;
  // Following forks covers the process tree that exists now as well as what it forks later.
  if (opts.follow_forks)
    for (pid_t pid : descendants_of(opts.pids)) {
      if (target(pid)) watched.push_back(pid);
      else notes.push_back(map_full(pid));
    }
  if (usdt)
    for (pid_t pid : watched) attach_usdt(pid);
  return true;
}

// The task walk gives the targets' existing threads their entries (seed.bpf.h).
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

size_t Collector::Impl::watch_comm_matches() {
  size_t added = 0;
  for (pid_t pid : pids_with_comm(comm))
    if (!pids.count(pid) && watch(pid)) ++added;
  return added;
}

// The --cgroup's members now: new ones become targets (a process moved in from outside; the
// kernel followed the forks), those that left are dropped. Returns how many were added.
size_t Collector::Impl::sync_cgroup() {
  const std::vector<pid_t> now = cgroup_members(opts.cgroup_dir);
  std::vector<pid_t> left;
  for (pid_t p : pids)
    if (!std::binary_search(now.begin(), now.end(), p)) left.push_back(p);
  for (pid_t p : left) untarget(p);
  size_t added = 0;
  for (pid_t p : now)
    if (!pids.count(p) && watch(p)) ++added;
  return added;
}

// The processes the kernel made targets by itself (forks followed, comm matches at exec).
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

bool Collector::add_pid(pid_t tgid) {
  if (!impl_->watch(tgid)) return false;
  impl_->seed();
  return true;
}

bool Collector::drop_pid(pid_t tgid) { return impl_->untarget(tgid); }

size_t Collector::rescan_comm() {
  if (impl_->comm.empty()) return 0;
  const size_t added = impl_->watch_comm_matches();
  if (added) impl_->seed();
  return added;
}

void Collector::refresh() {
  rescan_comm();
  if (!impl_->opts.cgroup_dir.empty()) {
    impl_->adopt_kernel_targets();   // forked children, before they are checked against the group
    if (impl_->sync_cgroup()) impl_->seed();
  }
  if (impl_->opts.follow_forks || !impl_->comm.empty()) impl_->adopt_kernel_targets();
  impl_->pairs->age(impl_->pairs->read(), snapshot::boottime_ns());
}

}  // namespace platoon::collectors
