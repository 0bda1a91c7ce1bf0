// Why a thread waited: its run-queue wait split by cause. Each cause but one is measured by a
// counter of the snapshot (bpf/wait_split.bpf.h says how); the contended wait, behind other
// tasks, is what is left. kWaitCauses is the one list of the causes: the window's split, the
// metric catalog's wait_*_pct metrics, report's "Wait by cause" table, top's detail section and
// doctor's carrier lines and JSON all iterate it, so adding a cause is one row here, one member
// of WaitSplit and the counter that measures it (docs/metrics.md, "Adding a wait cause").
#pragma once

#include <cstdint>
#include <string_view>

#include "bpf/snapshot/snapshot.hpp"

namespace platoon::analysis {

// The parts of a thread's (or a process's) wait_pct, in % of the window's wall time. A source
// without the split (kFieldWaitSplit unset: procfs, older recordings) books all of the wait as
// contended.
struct WaitSplit {
  double contended_pct = 0;
  double throttled_pct = 0;
  double steal_pct = 0;
  double irq_pct = 0;
  double idle_exit_pct = 0;
};

struct WaitCause {
  const char* key;               // "wait_<id>_pct": the metric's key (report JSON, CSV, top)
  const char* label;             // in text: report's column, top's detail, doctor's line
  const char* title;             // top's column header
  const char* help;              // top's help line, what the part means
  double WaitSplit::*pct;
  uint64_t snapshot::ThreadSample::*ns;  // the counter that measures it; nullptr: the wait left over
  uint32_t field;                // the Field a source needs to measure it; without it, "-"
};

// Order is output order (columns, JSON keys, CSV columns): a new cause goes last. The measured
// parts are taken from the wait in this order, each clamped to what is left.
inline constexpr WaitCause kWaitCauses[] = {
    {"wait_contended_pct", "contended", "%CONT", "%wait behind other tasks (the rest of the split below)",
     &WaitSplit::contended_pct, nullptr, snapshot::kFieldWaitSplit},
    {"wait_throttled_pct", "throttled", "%THR", "%wait while its cgroup was throttled by its CPU quota",
     &WaitSplit::throttled_pct, &snapshot::ThreadSample::wait_throttled_ns, snapshot::kFieldWaitSplit},
    {"wait_steal_pct", "steal", "%STL", "%wait while the hypervisor stole its CPU", &WaitSplit::steal_pct,
     &snapshot::ThreadSample::wait_steal_ns, snapshot::kFieldWaitSplit},
    // Its own field: a kernel without IRQ time accounting leaves it out (features.hpp).
    {"wait_irq_pct", "irq", "%IRQ", "%wait while its CPU served hard and soft interrupts", &WaitSplit::irq_pct,
     &snapshot::ThreadSample::wait_irq_ns, snapshot::kFieldWaitIrq},
    {"wait_idle_exit_pct", "idle exit", "%IDLX", "%wait after a wakeup onto an idle CPU (its idle exit)",
     &WaitSplit::idle_exit_pct, &snapshot::ThreadSample::wait_idle_exit_ns, snapshot::kFieldWaitSplit},
};

// A part a source did not measure shows as "-", never as a 0 that looks measured.
constexpr bool measured(const WaitCause& c, uint32_t fields) { return (fields & c.field) == c.field; }

// doctor's carrier_wait names a part by its key without the "wait_" prefix: "idle_exit_pct".
inline constexpr std::string_view kWaitKeyPrefix = "wait_";
constexpr std::string_view part_key(const WaitCause& c) { return std::string_view(c.key).substr(kWaitKeyPrefix.size()); }
static_assert([] {
  int rest = 0;  // exactly one part is the wait left over
  for (const WaitCause& c : kWaitCauses) {
    if (!std::string_view(c.key).starts_with(kWaitKeyPrefix)) return false;
    rest += c.ns == nullptr;
  }
  return rest == 1;
}());

}  // namespace platoon::analysis
