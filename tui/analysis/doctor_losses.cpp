// The check of the recording itself: lost_events (every other finding rests on this data).
#include <fmt/format.h>

#include "tui/analysis/doctor_checks.hpp"

namespace platoon::analysis::doctor {

void check_losses(const Context& c, CheckResult& out) {
  const Losses& l = c.w.losses;
  const uint64_t got = c.in.batches ? c.in.batches->events() : 0;
  const double lost_pct = l.lost_events ? 100.0 * static_cast<double>(l.lost_events) / static_cast<double>(l.lost_events + got) : 0;
  const bool any = l.lost_events || l.untracked_threads || l.lost_pairs || l.lost_targets || c.in.truncated || !c.in.complete;
  if (!any) return;
  Finding f;
  const bool bad = lost_pct >= kLostEventsPctWarn || l.untracked_threads || l.lost_targets || c.in.truncated;
  f.severity = bad ? Severity::warn : Severity::info;
  std::vector<std::string> parts;
  if (l.lost_events) parts.push_back(fmt::format("{} raw events lost ({:.2f}%)", l.lost_events, lost_pct));
  if (l.untracked_threads) parts.push_back(fmt::format("{} threads not tracked", l.untracked_threads));
  if (l.lost_pairs) parts.push_back(fmt::format("{} preemptor/waker pairs lost", l.lost_pairs));
  if (l.lost_targets) parts.push_back(fmt::format("{} target processes missed", l.lost_targets));
  if (c.in.truncated) parts.push_back("the recording was cut short (" + c.in.truncated_reason + ")");
  else if (!c.in.complete) parts.push_back("the recorder did not stop cleanly");
  f.title = "the data is incomplete: " + fmt::format("{}", fmt::join(parts, "; "));
  f.evidence = {{"lost_events", l.lost_events},
                {"events_read", got},
                {"lost_events_pct", round_to(lost_pct, 3)},
                {"untracked_threads", l.untracked_threads},
                {"lost_pairs", l.lost_pairs},
                {"lost_targets", l.lost_targets},
                {"truncated", c.in.truncated ? 1 : 0},
                {"complete", c.in.complete ? 1 : 0},
                {"snapshots", c.in.snapshots}};
  f.threshold = {{"lost_events_pct_warn", kLostEventsPctWarn}, {"untracked_threads", 0}, {"lost_targets", 0}};
  f.remedy = "Lost events: a larger ring buffer (platoon record --ringbuf-mb 64) or a shorter interval between "
             "reads; untracked threads/pairs: the maps hold 16,384 entries by default: raise --threads-max / --pairs-max or watch fewer processes. A cut-short "
             "recording holds what was written before; the findings cover only that.";
  out.findings.push_back(std::move(f));
}

}  // namespace platoon::analysis::doctor
