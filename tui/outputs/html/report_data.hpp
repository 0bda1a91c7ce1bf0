// The data an HTML report draws, as one JSON document the page's script reads: the report's and
// doctor's own JSON (the numbers every other output prints, embedded as they are) plus what only
// pictures need: each interval's figures per thread, run-queue latency histograms, the batch
// heat maps and the request latency spectra. Charts a recording cannot fill are named with why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tui/analysis/doctor.hpp"
#include "tui/analysis/window.hpp"
#include "tui/outputs/html/series.hpp"
#include "tui/outputs/report.hpp"

namespace platoon::outputs::html {

// The most threads a chart draws: carriers and pollers first, then the busiest. The rest stay in
// the tables of the report JSON, and the page says how many were left out.
inline constexpr size_t kMaxChartedThreads = 24;
// The most CPUs a thread's placement rows show: those it switched in on most.
inline constexpr size_t kMaxPlacementCpus = 16;

// One recording, everything its half of the page needs.
struct Recording {
  const ReportHeader& header;
  const analysis::Window& window;        // first to last snapshot
  const IntervalSeries& series;
  const analysis::doctor::Diagnosis& diagnosis;
  const analysis::doctor::BatchTracker* batches = nullptr;  // nullptr: no raw events
  std::string no_events_reason;
  std::vector<std::string> reader_notes;  // what the reader's caps cut, truncation: shown with the losses
};

struct PageInfo {
  std::string title;
  std::string command;         // the command line that made the page
  std::string version;
};

// {"page": ..., "wait_causes": [...], "recordings": [A, (B)], "compare": {...} (with b)}
std::string page_data_json(const PageInfo& info, const Recording& a, const Recording* b = nullptr);

// The request spectrum's percentiles: 0, then four per halving of the distance to 100, while a
// histogram of `count` samples still tells them apart, then 100.
std::vector<double> spectrum_percentiles(uint64_t count);

}  // namespace platoon::outputs::html
