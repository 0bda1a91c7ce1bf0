// The collector's state, shared by the files that do its three jobs (private to them):
//   collector.cpp          open(): load (load_plan.hpp), attach, adopt targets, seed
//   collector_targets.cpp  which processes are watched: the target map, --comm, --cgroup, forks,
//                          the runtime probes of each target
//   collector_maps.cpp     reading the maps: snapshots, losses, ring-buffer records, program stats
#pragma once

#include <bpf/libbpf.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bpf/collectors/collector.hpp"
#include "bpf/collectors/load_plan.hpp"
#include "bpf/collectors/machine_context.hpp"
#include "bpf/collectors/pair_ledger.hpp"
#include "bpf/collectors/request_book.hpp"
#include "bpf/collectors/runtime_stats_reader.hpp"
#include "bpf/collectors/thread_entries.hpp"

namespace platoon::collectors {

struct LinkDeleter {
  void operator()(bpf_link* l) const { bpf_link__destroy(l); }
};
struct RingDeleter {
  void operator()(ring_buffer* r) const { ring_buffer__free(r); }
};
using LinkPtr = std::unique_ptr<bpf_link, LinkDeleter>;
using RingPtr = std::unique_ptr<ring_buffer, RingDeleter>;

// Why open() gave up, for its caller.
struct OpenFailure {
  OpenError kind = OpenError::other;
  std::string message;
};

// Members are destroyed in the reverse of their order: whatever holds the skeleton's programs or
// maps (links, the ring buffer, the readers) comes after `skel`.
struct Collector::Impl {
  CollectorOptions opts;
  SkelPtr skel;
  bool raw_tp = false;
  uint32_t fields = snapshot::kFieldsBpf;
  bool usdt = true;                       // the runtime probes loaded
  bool events = false;                    // the programs write the ring buffer (record_events)
  std::string comm;                       // truncated to what the kernel keeps
  int ncpus = 1;
  std::vector<std::string> notes;
  std::optional<ThreadEntries> entries;   // where the thread entries live, and reading them
  std::optional<PairLedger> pairs;        // the pairs map and what aged out of it
  MachineContext context;                 // per-CPU times and the threads' CPU cgroups
  std::optional<RequestBook> requests;    // the socket programs loaded (bpf/requests.bpf.h)
  bool requests_planned = false;

  // Targets (collector_targets.cpp).
  std::unordered_set<pid_t> pids;         // added from user space (for USDT attach)
  std::unordered_map<pid_t, std::string> usdt_exe;  // pid -> executable its probes were looked up in
  std::map<pid_t, std::unique_ptr<RuntimeStatsReader>> stats_tables;  // runtimes that keep their own drain counts
  std::vector<LinkPtr> usdt_links;        // detached before the tables above are closed

  // The ring buffer (collector_maps.cpp).
  RingPtr ring;
  std::vector<int> online_cpus;           // where flush_stages runs
  const std::function<void(const void*, size_t)>* sink = nullptr;
  size_t polled = 0;

  // open(), in order: load, attach, adopt targets, seed.
  static std::unique_ptr<Impl> load(const CollectorOptions& o, OpenFailure* f);
  bool attach(OpenFailure* f);
  bool adopt_targets(OpenFailure* f);
  void seed();

  // Targets. target()/untarget() change the kernel's target set; watch() also attaches the
  // runtime probes of a process new to it; none of them seeds (callers seed once after).
  bool target(pid_t pid);
  bool untarget(pid_t pid);
  bool watch(pid_t pid);
  size_t watch_comm_matches();
  size_t sync_cgroup();
  void adopt_kernel_targets();
  void attach_usdt(pid_t pid);
  void seed_listeners(const std::set<uint16_t>& ports, uint32_t owner);

  // Reading the maps.
  static int on_record(void* ctx, void* data, size_t size);
  void forget_exited(const std::unordered_set<__u32>& exited, const KernelPairs& kernel_pairs);
  void read_losses(snapshot::Snapshot& snap) const;
  void enable_stages();
  void flush_stages();                    // every CPU's staged records into the ring buffer
  int flush_stage_on(int cpu);            // runs flush_stages on `cpu`; 0 or a negative errno
};

}  // namespace platoon::collectors
