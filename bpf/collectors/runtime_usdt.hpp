// The runtime's USDT probes as the collector attaches them to one platoon-runtime process:
// with the runtime's stats table (runtime/stats_table.hpp) only its `stats` probe, which raises
// the semaphore that makes the carriers keep their drain/steal aggregates (read per snapshot by
// RuntimeStatsReader), plus drain and steal for raw events when asked for; without the table
// (an older runtime, or the symbol not found) drain and steal book per hit, as before.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "bpf/collectors/runtime_stats_reader.hpp"

struct bpf_link;
struct bpf_program;
struct platoon_bpf;

namespace platoon::collectors {

// book: aggregates per hit; event: raw events only; stats: raises the semaphore.
enum class UsdtRole { stats, book, event };
struct UsdtProbe {
  const char* name;
  bpf_program* prog;
  UsdtRole role;
};
// Every runtime program of the skeleton (to set their autoload together).
std::vector<UsdtProbe> usdt_probes(platoon_bpf* s);

struct UsdtLinkDeleter {
  void operator()(bpf_link* l) const;
};

struct RuntimeProbes {
  std::vector<std::unique_ptr<bpf_link, UsdtLinkDeleter>> links;
  std::unique_ptr<RuntimeStatsReader> table;  // null: drains are booked per probe hit
  std::vector<std::string> notes;
};

// exe: what /proc/PID/exe names, for the notes. drain_events: the ring buffer is open and raw
// drain events are wanted.
RuntimeProbes attach_runtime_probes(platoon_bpf* skel, pid_t pid, const std::string& exe, bool drain_events);

}  // namespace platoon::collectors
