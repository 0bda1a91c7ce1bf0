#include "tui/analysis/doctor_checks.hpp"

#include <iterator>

namespace platoon::analysis::doctor {

namespace {

// Every finding doctor knows. Findings are sorted by severity afterwards, stably, so within one
// severity they keep this order; so do the "not evaluated" lines. The requests' wait comes first:
// it is what the clients feel, and the findings after it say why.
constexpr Check kChecks[] = {
    {"requests_waiting_in_sockets", {Need::requests}, check_requests_waiting},
    {"carrier_waiting", {Need::carriers, Need::run_wait}, check_waiting},
    {"carrier_migrating", {Need::carriers, Need::migrations}, check_migrating},
    {"platoon_effect", {Need::carriers, Need::raw_events}, check_platoon_effect},
    {"poller_competing", {Need::carriers, Need::pairs}, check_poller},
    {"oversubscribed", {Need::run_wait}, check_oversubscribed},
    {"cpu_throttled", {Need::cgroups}, check_throttled},
    {"vm_steal", {Need::cpu_times}, check_steal},
    {"irq_pressure", {Need::cpu_times}, check_irq},
    {"lost_events", {}, check_losses},
};

// Each need: whether the data has it, and what "not evaluated" says when it does not.
struct Requirement {
  Need need;
  bool (*met)(const Context& c);
  const char* reason;
};

constexpr Requirement kRequirements[] = {
    {Need::carriers, [](const Context& c) { return !c.roles.carriers.empty(); },
     "no carrier or event-loop thread (none named carrier*, none with epoll cycles or drains)"},
    {Need::run_wait, [](const Context& c) { return c.w.has(snapshot::kFieldRunWait); }, "the source has no run/wait times"},
    {Need::migrations, [](const Context& c) { return c.w.has(snapshot::kFieldMigrations); }, "the source has no migration counts"},
    {Need::pairs, [](const Context& c) { return c.w.has(snapshot::kFieldPairs); }, "the source has no wakers or preemptors (procfs)"},
    {Need::raw_events, [](const Context& c) { return c.in.batches != nullptr; },
     "no raw events (switches, epoll returns, drains) to relate batches to waits"},
    {Need::cgroups, [](const Context& c) { return !c.w.cgroups.empty(); },
     "no CPU cgroup of the target was read (a recording before format 1.2, or no cgroup cpu controller)"},
    {Need::cpu_times, [](const Context& c) { return !c.w.cpus.empty(); },
     "no per-CPU times in this window (a recording before format 1.2)"},
    {Need::requests, [](const Context& c) { return c.w.has(snapshot::kFieldRequests); },
     "the source has no request latency (record with platoon record --requests)"},
};

// One requirement per need, in the enum's order (the order "first need missing" follows).
constexpr bool in_need_order() {
  for (size_t i = 0; i < std::size(kRequirements); ++i)
    if (kRequirements[i].need != static_cast<Need>(i)) return false;
  return std::size(kRequirements) == static_cast<size_t>(Need::requests) + 1;
}
static_assert(in_need_order());

}  // namespace

std::span<const Check> checks() { return kChecks; }

std::optional<std::string> missing(const Context& c, Needs needs) {
  for (const Requirement& r : kRequirements) {
    if (!needs.has(r.need) || r.met(c)) continue;
    // The source that kept no raw events knows why (--no-events, procfs): its word is better.
    if (r.need == Need::raw_events && !c.in.no_events_reason.empty()) return c.in.no_events_reason;
    return std::string(r.reason);
  }
  return std::nullopt;
}

}  // namespace platoon::analysis::doctor
