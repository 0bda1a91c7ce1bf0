// Who is who in a window: the carriers (event loops), their poller, and the names findings give
// them; the Context every check reads is built from these.
#include <fmt/format.h>

#include "tui/analysis/doctor_checks.hpp"

namespace platoon::analysis::doctor {

namespace {

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool named_carrier(const ThreadWindow& t) { return starts_with(t.comm, "carrier"); }
bool drains(const ThreadWindow& t) { return t.drain && t.drain->batches > 0; }
bool polls(const ThreadWindow& t) { return t.io && t.io->cycles > 0; }
double per_s(double n, double wall_s) { return wall_s > 0 ? n / wall_s : 0; }

}  // namespace

Roles find_roles(const Window& w) {
  Roles r;
  // Wakeups each thread handed to event-loop-like threads (named carriers, drainers, pollers).
  std::map<uint32_t, uint64_t> wakes;
  for (const auto& t : w.threads) {
    if (!(named_carrier(t) || drains(t) || polls(t))) continue;
    for (const auto& p : t.woken_by)
      if (p.tid != t.tid && p.tid != 0) wakes[p.tid] += p.count;
  }
  for (const auto& t : w.threads) {
    const bool wakes_loops = per_s(static_cast<double>(wakes[t.tid]), w.wall_s) >= kPollerWakeupsPerS;
    // A thread that wakes the loops and does not run fibers itself is their poller.
    const bool poller = !named_carrier(t) && !drains(t) &&
                        (wakes_loops || (polls(t) && t.comm.find("poller") != std::string::npos));
    if (poller) r.pollers.push_back(&t);
    else if (named_carrier(t) || drains(t) || polls(t)) r.carriers.push_back(&t);
  }
  return r;
}

Names::Names(const Window& w) {
  for (const auto& t : w.threads) count_[t.comm]++;
}

std::string Names::operator()(const ThreadWindow& t) const {
  auto it = count_.find(t.comm);
  return it != count_.end() && it->second > 1 ? fmt::format("{}/{}", t.comm, t.tid) : t.comm;
}

Context::Context(const DoctorInput& input, const Window& window)
    : in(input), w(window), roles(find_roles(window)), name(window), remedies{input.runtime} {
  for (const ThreadWindow* t : roles.carriers) carrier_tids.insert(t->tid);
  for (const auto& t : w.threads) target_pids.insert(t.pid);
  subjects = roles.carriers;
  if (subjects.empty())
    for (const auto& t : w.threads)
      if (t.cpu_pct + t.wait_pct >= kBusyPct) subjects.push_back(&t);
  if (subjects.empty())
    for (const auto& t : w.threads) subjects.push_back(&t);
}

const ThreadBatches* Context::batches_of(uint32_t tid) const {
  if (!in.batches) return nullptr;
  auto it = in.batches->threads().find(tid);
  return it == in.batches->threads().end() ? nullptr : &it->second;
}

}  // namespace platoon::analysis::doctor
