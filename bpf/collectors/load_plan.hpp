// How the collector loads bpf/platoon.bpf.c, in the order bcc's libbpf-tools read: a plan per
// attempt (every knob, which programs load, the maps' sizes), the plan applied to a freshly
// opened skeleton in one place, then the load. Attempts go from the richest down:
//
//   tp_btf                      BTF-typed tracepoints, the seed walk, task storage (5.5+)
//   tp_btf without requests     the same without the socket programs, when they were asked for
//   raw_tp                      the same hooks as raw tracepoints (4.17+)
//   raw_tp without epoll/usdt   the optional programs left out
//
// The first attempt that loads wins; what it gave up is noted, and its fields are what the
// snapshots fill. A refused permission ends the attempts at once: no attempt would do better.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/collectors/collector.hpp"
#include "bpf/collectors/features.hpp"
#include "bpf/platoon.h"

struct platoon_bpf;

namespace platoon::collectors {

// libbpf's print callback is process-wide: its output goes to stderr only when verbose, and the
// first warning of a load attempt that names a failure is kept as the attempt's reason.
void capture_libbpf_output(bool verbose);

// The syscalls whose time blocked in epoll is traced (sys_enter_/sys_exit_ tracepoints).
inline constexpr std::array<const char*, 3> kEpollSyscalls{"epoll_wait", "epoll_pwait", "epoll_pwait2"};
using EpollSet = std::array<bool, kEpollSyscalls.size()>;  // one flag per kEpollSyscalls entry

// What a plan is computed from besides the options, found once per open.
struct LoadInputs {
  KernelFeatures kernel;
  Injected inject;               // PLATOON_INJECT_LOAD_FAIL (features.hpp)
  bool have_tracefs = false;
  EpollSet epoll_exits{};        // the syscalls whose exit tracepoint tracefs shows
};
LoadInputs probe_load_inputs(const std::string& events_dir);

// One load attempt: the flavour of the hooks, and whether the optional programs (the seed walk,
// epoll and the runtime probes) are in.
struct Attempt {
  bool raw_tp = false;
  bool optional = true;
  bool requests = true;  // the socket programs, when asked for: an attempt without them follows
                         // a tp_btf one that failed, so that they never cost the rest tp_btf
  const char* name() const {
    return !raw_tp ? (requests ? "tp_btf" : "tp_btf without requests") : optional ? "raw_tp" : "raw_tp without epoll/usdt";
  }
};

// Everything one attempt sets before the load. apply_plan() writes it into the skeleton; nothing
// else touches a knob, a program's autoload or a map's size.
struct LoadPlan {
  Attempt attempt;
  // The knobs (rodata targ_*), as bpf/maps.bpf.h describes them.
  struct Knobs {
    bool events = false;
    std::string comm;               // targ_comm, truncated as the kernel keeps it; targ_comm_set if any
    uint64_t wakeup_bytes = 1;
    bool follow_forks = false;
    bool all = false;
    uint32_t self = 0;
    bool switch_state_arg = true;
    uint32_t cpu_slots = PLATOON_MAX_CPUS;
    bool epoll_at_switch = false;
    bool task_storage = false;      // thread entries in task-local storage (thread_entries.hpp)
    uint32_t threads_max = PLATOON_MAX_THREADS;
  } knobs;
  // The programs beyond the attempt's hooks. flush_stages loads with knobs.events, dump_threads
  // with knobs.task_storage.
  bool seed = false;                // seed_threads, the attach-time task walk
  EpollSet epoll{};                 // per kEpollSyscalls entry: its tracepoints attach
  bool usdt = false;                // the runtime probes
  bool requests = false;            // the socket programs (bpf/requests.bpf.h)
  bool send_start = false;          // with them: writes seen at their start (tcp_sendmsg_locked)
  // The maps' sizes (`events` is a one-entry array where the kernel has no ring buffer).
  uint32_t pairs_max = PLATOON_MAX_PAIRS;
  bool ringbuf = true;
  uint32_t ringbuf_bytes = 0;
  uint32_t request_ring_bytes = 0;
  // What follows for the snapshots, and what the notes say the attempt drops.
  uint32_t fields = snapshot::kFieldsBpf;
  std::vector<std::string> notes;
};
LoadPlan plan_load(const CollectorOptions& o, const LoadInputs& in, const Attempt& a);
void apply_plan(const LoadPlan& plan, platoon_bpf* skel);

struct SkelDeleter {
  void operator()(platoon_bpf* s) const;
};
using SkelPtr = std::unique_ptr<platoon_bpf, SkelDeleter>;

// What the richest attempt that loaded left, or why none did.
struct Loaded {
  SkelPtr skel;
  LoadPlan plan;
  std::string reasons;  // of the richer attempts that failed: "tp_btf: ...; raw_tp: ..."
  int err = 0;          // the last attempt's libbpf error (negative errno) when none loaded
  bool permission_denied() const;
  // Why nothing loaded, for open()'s caller; and, when something did, what it gave up.
  OpenError error_kind() const;
  std::string error_message(bool verbose) const;
  std::vector<std::string> notes(const CollectorOptions& o, const KernelFeatures& kf) const;
};
Loaded load_with_fallback(const CollectorOptions& o, const LoadInputs& in);

// The errno the kernel refused with goes in the message, so a note or error says what the kernel
// said (and a capability taken away by a container or systemd is not mistaken for a missing root).
std::string need_root(const char* step, int err);
std::string errstr(int err);

}  // namespace platoon::collectors
