// The doctor's checks as one list: each entry is a finding's id, the data it needs and the
// function that runs it. diagnose() (doctor.cpp) walks the list: a check whose needs the source
// lacks is reported "not evaluated" with the reason its need gives, the others run and hand
// back their findings. Adding a finding is one entry in kChecks (doctor_checks.cpp) and its
// function; docs/doctor.md ("Adding a finding") shows the lines.
//
// The functions live by what they look at: the carriers and their poller (doctor_carriers.cpp),
// the CPUs the target gets (doctor_machine.cpp), the recording itself (doctor_losses.cpp), the
// requests on its connections (doctor_requests.cpp). Each
// builds its evidence from typed rows and turns it into the finding's Object only when the
// finding is complete, so no check reads its own evidence back.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "tui/analysis/doctor.hpp"
#include "tui/analysis/doctor_remedies.hpp"

namespace platoon::analysis::doctor {

// Thread names as findings list them: the comm, with the tid when another thread shares it.
class Names {
 public:
  explicit Names(const Window& w);
  std::string operator()(const ThreadWindow& t) const;

 private:
  std::map<std::string, int> count_;
};

// What every check reads: the input and its window, who the carriers are, and how to word the
// threads' names and the remedies.
struct Context {
  Context(const DoctorInput& in, const Window& w);

  const DoctorInput& in;
  const Window& w;
  Roles roles;
  Names name;
  std::set<uint32_t> carrier_tids;
  std::set<uint32_t> target_pids;
  // The threads the machine's findings are about: the carriers when there are any, else the
  // busy threads (a JVM's or Go's workers need not look like event loops to be throttled), else all.
  std::vector<const ThreadWindow*> subjects;
  Remedies remedies;

  bool is_carrier(uint32_t tid) const { return carrier_tids.count(tid) > 0; }
  const ThreadBatches* batches_of(uint32_t tid) const;  // nullptr: no raw events, or none of tid
  double per_s(double n) const { return w.wall_s > 0 ? n / w.wall_s : 0; }
  double pct_of_wall(uint64_t ns) const { return w.wall_s > 0 ? static_cast<double>(ns) / 1e9 / w.wall_s * 100.0 : 0; }
};

// What a check can need from the data. A source lacking one leaves the check "not evaluated",
// with the reason doctor_checks.cpp gives that need; the first need missing, in this order, is named.
enum class Need : uint8_t {
  carriers,     // a carrier or event-loop thread was found
  run_wait,     // run and wait times (kFieldRunWait)
  migrations,   // migration counts (kFieldMigrations)
  pairs,        // preemptors and wakers (kFieldPairs)
  raw_events,   // the recording kept raw events (the batch analysis)
  cgroups,      // the target's CPU cgroups were read
  cpu_times,    // per-CPU times (steal, interrupts)
  requests,     // per-request latency on the targets' connections (kFieldRequests)
};

class Needs {
 public:
  constexpr Needs(std::initializer_list<Need> needs) {
    for (Need n : needs) bits_ |= 1u << static_cast<unsigned>(n);
  }
  constexpr bool has(Need n) const { return (bits_ >> static_cast<unsigned>(n)) & 1u; }

 private:
  uint32_t bits_ = 0;
};

// What one check hands back: its findings (diagnose() gives them the entry's id), or why the
// data, though it had what the check needs, could not answer after all.
struct CheckResult {
  std::vector<Finding> findings;
  std::string not_evaluated;
};

using CheckFn = void (*)(const Context& c, CheckResult& out);

struct Check {
  const char* id;   // stable snake_case: the JSON's id, the docs' table row
  Needs needs;
  CheckFn run;
};

// Every check, in the order findings of one severity and "not evaluated" lines are reported.
std::span<const Check> checks();
// Why the data cannot answer a check with these needs; nullopt when it has all of them.
std::optional<std::string> missing(const Context& c, Needs needs);

// The checks (one function each, named in kChecks).
void check_requests_waiting(const Context& c, CheckResult& out);
void check_waiting(const Context& c, CheckResult& out);
void check_migrating(const Context& c, CheckResult& out);
void check_platoon_effect(const Context& c, CheckResult& out);
void check_poller(const Context& c, CheckResult& out);
void check_oversubscribed(const Context& c, CheckResult& out);
void check_throttled(const Context& c, CheckResult& out);
void check_steal(const Context& c, CheckResult& out);
void check_irq(const Context& c, CheckResult& out);
void check_losses(const Context& c, CheckResult& out);

// What --vs compares, from the carriers and the requests (doctor_key_numbers.cpp).
KeyNumbers key_numbers(const Context& c);

// Typed evidence rows become the finding's Array only when it is complete.
template <class Row>
Array array_of(const std::vector<Row>& rows) {
  Array a;
  a.reserve(rows.size());
  for (const Row& r : rows) a.push_back(r.value());
  return a;
}

}  // namespace platoon::analysis::doctor
