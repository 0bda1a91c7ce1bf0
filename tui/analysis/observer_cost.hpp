// The observer effect, in numbers: what platoon itself cost while it watched. From two cost
// samples (the kernel's per-program BPF counters, the wall clock, platoon's own CPU time) it
// gives, per BPF program, run time per second, % of one CPU, ns per run and runs per second,
// the totals, and platoon's own % CPU. record prints it at the end and writes it into the trace
// as notes (cost_note), report reads the last such note back (parse_cost_note), top shows it
// in its header and the exporter exports the raw counters.
//
// Pure arithmetic and text: no BPF, no curses. The BPF figures are only as good as the kernel's
// run-time stats (bpf/collectors/bpf_stats.hpp): when they were off, BpfStats::unknown says so
// and why, and the programs' numbers are not shown as if they were zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/snapshot/source.hpp"

namespace platoon::analysis {

// Cumulative at one instant.
struct CostSample {
  snapshot::CostReading bpf;
  uint64_t wall_ns = 0;       // CLOCK_BOOTTIME
  uint64_t self_cpu_ns = 0;   // user + system time of this process, all its threads
};
// This process's user + system time (getrusage RUSAGE_SELF): a `record -- CMD`'s command is a
// child and is not counted.
uint64_t self_cpu_ns();
// source.cost(), the boot-time clock and self_cpu_ns(), read now.
CostSample take_cost_sample(const snapshot::SnapshotSource& source);

struct ProgramRate {
  std::string name;
  uint64_t runs = 0, run_ns = 0, misses = 0;   // over the span
  double ns_per_s = 0;                         // run time per second of wall time
  double cpu_pct = 0;                          // the same as % of one CPU
  double runs_per_s = 0;
  std::optional<double> ns_per_run;            // none without runs
};

struct ObserverCost {
  snapshot::BpfStats stats = snapshot::BpfStats::none;
  std::string why;                             // how the stats were on, or why not
  uint64_t wall_ns = 0;
  double wall_s = 0;
  // Sampled stats (CostReading::sampled): the time the kernel counted within the span.
  // The programs' runs and run time are then estimates for the whole span (counted × wall /
  // counted_ns); ns per run is exact either way. 0 when the stats were on throughout.
  uint64_t counted_ns = 0;
  std::vector<ProgramRate> programs;           // the programs that ran, costliest first
  uint64_t bpf_runs = 0, bpf_run_ns = 0, bpf_misses = 0;
  double bpf_ns_per_s = 0, bpf_cpu_pct = 0;
  uint64_t self_cpu_ns = 0;
  double self_cpu_pct = 0;                     // platoon's own CPU, % of one CPU
};

// From deltas: per-program run counts and times over wall_ns, and self CPU over it. counted_ns:
// see ObserverCost (the deltas are already the span's estimates).
ObserverCost observer_cost(snapshot::BpfStats stats, std::string why, uint64_t wall_ns, uint64_t self_cpu_ns,
                           const std::vector<snapshot::ProgramCost>& deltas, uint64_t counted_ns = 0);
// Between two samples of the same source; programs are matched by name (a program whose
// counters went backwards was reloaded: its counts since are `to`'s). Sampled readings are
// scaled from the counted time to the span; a span with no counted time has unknown stats.
uint64_t counted_between(const CostSample& from, const CostSample& to);
ObserverCost observer_cost(const CostSample& from, const CostSample& to);

// "BPF 0.82% of a CPU (switch_btf 95 ns/run 12.3k/s, ...), recorder 0.41% CPU": at most
// max_programs programs named; "BPF unknown (why)" when the stats were off; `self` names
// platoon's own process ("recorder", "top", "exporter").
std::string cost_summary(const ObserverCost& c, const std::string& self = "recorder", size_t max_programs = 3);
// "cost: bpf 0.8% cpu, self 0.3%" for top's header ("bpf ?" when unknown).
std::string cost_short(const ObserverCost& c);

// A trace note: the summary for people, then " | " and the counters for report to read back:
//   observer cost: BPF 0.82% ... | stats=on wall_ns=N self_cpu_ns=N [counted_ns=N] prog=NAME/RUNS/NS/MISSES ... why=TEXT
// With sampled stats RUNS and NS are already the span's estimates, so that a reader that does
// not know counted_ns still reads the right rates.
std::string cost_note(const ObserverCost& c);
bool is_cost_note(std::string_view text);
// nullopt when the text is not a cost note or its counters do not parse.
std::optional<ObserverCost> parse_cost_note(std::string_view text);

}  // namespace platoon::analysis
