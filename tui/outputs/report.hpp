// The tables `platoon report FILE [--vs FILE2] [--format text|json]` prints: pure functions from
// Windows (window.hpp) and a small header to a string. JSON holds the keys of ARCHITECTURE.md's
// "platoon report --format json (minimum keys)" plus extras; a field the source lacks is left out
// of every thread (cpu_distribution, runq_latency_us, preempted_by, woken_by, io, drain) and named
// in "fields_missing", so an absent key never reads as zero. The plain per-thread keys, the table
// columns and the --vs rows are the metric catalog's (tui/metrics/catalog.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tui/analysis/observer_cost.hpp"
#include "tui/analysis/window.hpp"

namespace platoon::outputs {

struct ReportHeader {
  std::string file;
  snapshot::Source source = snapshot::Source::bpf;
  uint32_t fields = snapshot::kFieldsBpf;
  std::string attach_mode;     // how the producer found its targets: "pid", "comm", "command"
  std::string target;          // what it watched, as the user named it
  double duration_s = 0;
  uint64_t lost_events = 0;    // always shown, even when 0
  std::vector<std::string> notes;
  // What the recorder cost (its last "observer cost" note); none in older recordings.
  std::optional<analysis::ObserverCost> cost;
};
// "observer cost: BPF 0.82% of a CPU (...), recorder 0.41% CPU over 10.0 s", or
// "observer cost: unknown (...)" when the recording holds no cost note.
std::string observer_cost_line(const ReportHeader& h);
// Source, fields, duration and lost events taken from the window.
ReportHeader header_for(const analysis::Window& w, std::string file = {});

struct ReportOptions {
  size_t max_threads_per_process = 40;  // text only: the busiest (run + wait) are shown
  bool pretty = true;                   // JSON indentation
};

std::string report_text(const ReportHeader& h, const analysis::Window& w, const ReportOptions& opt = {});
std::string report_json(const ReportHeader& h, const analysis::Window& w, const ReportOptions& opt = {});

// --vs: A and B side by side with B/A.
struct Side {
  const ReportHeader& header;
  const analysis::Window& window;
};
std::string compare_text(Side a, Side b, const ReportOptions& opt = {});
std::string compare_json(Side a, Side b, const ReportOptions& opt = {});

// Threads of A and B paired by comm (the n-th "carrier-0" of A with the n-th of B), then the
// rest in tid order; a thread with no partner is paired with nullptr.
using ThreadMatch = std::pair<const analysis::ThreadWindow*, const analysis::ThreadWindow*>;
std::vector<ThreadMatch> match_threads(const analysis::Window& a, const analysis::Window& b);
// B / A; nullopt when either is unknown or A is 0 (shown as "-" and null).
std::optional<double> ratio(std::optional<double> a, std::optional<double> b);

}  // namespace platoon::outputs
