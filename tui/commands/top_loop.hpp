// Pieces of `platoon top`'s loop kept apart from it: key actions applied to the model and the
// recorder behind the `r` key (the stop signals are live_session.hpp's).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/commands/live_session.hpp"
#include "tui/dashboard/state/top_state.hpp"
#include "tui/trace/trace_writer.hpp"

namespace platoon::cli {

// What a key asks of the loop beyond changing the model.
enum class Intent { none, redraw, quit, retime, record, step_forward, step_back };
Intent apply_key(int key, model::TopState& st, int page);

// `r`: aggregate snapshots to a trace file while watching; the header shows its name and state.
class Recorder {
 public:
  bool active() const { return writer_ != nullptr; }
  // Starts a file named after the time; writes `baseline` as the first snapshot.
  bool start(model::TraceMeta meta, const model::Snapshot& baseline, std::string& error);
  void write(const model::Snapshot& s);
  void stop(const std::string& reason);
  std::string describe() const;  // "REC file (N snapshots)", "saved file (N)", "REC failed: .."
  ~Recorder() { stop("top quit"); }

 private:
  std::unique_ptr<model::TraceWriter> writer_;
  std::string path_, last_;
  uint64_t snapshots_ = 0;
};

}  // namespace platoon::cli
