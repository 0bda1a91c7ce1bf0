// One diagnosis's inputs, gathered from a trace file: the window, the batch tracker fed with the
// raw events, and what doctor says about the file itself. `platoon doctor FILE` and the HTML
// report (which also draws each interval, so it taps the snapshots on their way) share it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/analysis/doctor.hpp"
#include "tui/analysis/window.hpp"

namespace platoon::cli {

// Everything one diagnosis needs; the tracker and the window outlive the DoctorInput that
// points at them. Large-ish (a tracker with a reorder heap): keep it off the stack.
struct DoctorRun {
  analysis::Window window;
  analysis::doctor::BatchTracker batches;
  bool has_batches = false;
  analysis::doctor::DoctorInput input;
  std::vector<std::string> warnings;  // printed to stderr before the findings
};

// Called with every snapshot of the file, in order, before the window takes it.
using SnapshotTap = std::function<void(const snapshot::Snapshot&)>;

// Reads a recording of at least two snapshots; false with a one-line error otherwise.
bool load_doctor_file(const std::string& path, DoctorRun& run, std::string& error, const SnapshotTap& tap = {});
analysis::doctor::Diagnosis diagnose(DoctorRun& run);

}  // namespace platoon::cli
