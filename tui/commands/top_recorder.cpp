#include "tui/commands/top_recorder.hpp"

#include <time.h>

#include <cstdio>
#include <ctime>

#include "tui/outputs/output_file.hpp"

namespace platoon::cli {

// As often as `platoon record` writes them (record.cpp kCostNoteNs).
constexpr uint64_t kCostNoteNs = 5'000'000'000ull;

bool Recorder::start(trace::TraceMeta meta, const snapshot::Snapshot& baseline, const analysis::CostSample& cost,
                     std::string& error) {
  char stem[64];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stem, sizeof stem, "platoon-top-%Y%m%d-%H%M%S", &tm);
  meta.start_boottime_ns = 0;  // the writer reads the clocks now
  meta.start_realtime_ns = 0;
  // `r` twice within a second gets "-2": a recording never replaces an earlier one.
  auto file = outputs::create_unique(stem, ".trace", &error);
  if (file) writer_ = trace::TraceWriter::create(std::move(*file), meta, {}, &error);
  if (!writer_) {
    last_ = "REC failed: " + error;
    return false;
  }
  path_ = writer_->path();
  snapshots_ = 0;
  cost0_ = cost;
  cost_note_ns_ = cost.wall_ns;
  write(baseline, cost);
  return true;
}

void Recorder::cost_note(const analysis::CostSample& now) {
  writer_->write_note(now.wall_ns, analysis::cost_note(analysis::observer_cost(cost0_, now)));
  cost_note_ns_ = now.wall_ns;
}

void Recorder::write(const snapshot::Snapshot& s, const analysis::CostSample& cost) {
  if (!writer_) return;
  if (cost.wall_ns - cost_note_ns_ >= kCostNoteNs) cost_note(cost);
  if (!writer_->write_snapshot(s)) {
    last_ = "REC failed: " + writer_->error();
    writer_.reset();
    return;
  }
  ++snapshots_;
}

void Recorder::stop(const std::string& reason, const analysis::CostSample* cost) {
  if (!writer_) return;
  if (cost) cost_note(*cost);
  writer_->finish(reason);
  writer_.reset();
  last_ = "saved " + path_ + " (" + std::to_string(snapshots_) + " snapshots)";
}

std::string Recorder::describe() const {
  if (writer_) return "REC " + path_ + " (" + std::to_string(snapshots_) + ")";
  return last_;
}

}  // namespace platoon::cli
