// `platoon doctor`: findings about how the scheduler treats an event-loop server, each with the
// numbers that triggered it, the limits it was held against and a remedy. Pure model code: a
// Window (window.hpp) and, when the recording kept them, the raw events (for the platoon effect:
// batches measured against the run-queue wait that came before them) go in; findings come out,
// as text or as the JSON of ARCHITECTURE.md (`{"findings": [...]}`).
//
// Carriers are found, not named: a thread whose comm starts with "carrier", or that drains
// runtime fiber queues, or that makes epoll wait calls without being the poller that wakes the
// others (a nginx worker or any event loop counts).
//
// The checks themselves are one list, with what each needs: doctor_checks.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "bpf/snapshot/runtime_kind.hpp"
#include "tui/analysis/doctor_batches.hpp"
#include "tui/analysis/doctor_thresholds.hpp"
#include "tui/analysis/window.hpp"

// Everything here lives in platoon::analysis::doctor: its generic names (Value, Finding) stay
// out of the way of the rest of the analysis. Its text and JSON are tui/outputs/doctor_output.hpp.
namespace platoon::analysis::doctor {

// ---- a small ordered JSON value: evidence and thresholds hold numbers, names and rows ----

struct Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;

struct Value {
  std::variant<std::monostate, double, std::string, Array, Object> v;  // monostate: null (unknown)
  Value() = default;
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Value(T n) : v(static_cast<double>(n)) {}  // NOLINT: numbers convert implicitly on purpose
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(Array a) : v(std::move(a)) {}
  Value(Object o) : v(std::move(o)) {}

  bool null() const { return std::holds_alternative<std::monostate>(v); }
  const double* number() const { return std::get_if<double>(&v); }
  const std::string* string() const { return std::get_if<std::string>(&v); }
  const Array* array() const { return std::get_if<Array>(&v); }
  const Object* object() const { return std::get_if<Object>(&v); }
  // Member of an object; nullptr when absent or not an object.
  const Value* find(std::string_view key) const;
};
const Value* find(const Object& o, std::string_view key);
// Evidence numbers are rounded for reading (JSON and text alike).
double round_to(double v, int decimals);

// ---- findings ----

enum class Severity : uint8_t { info = 0, warn = 1, critical = 2 };
const char* to_string(Severity s);

struct Finding {
  std::string id;              // stable snake_case: carrier_waiting, carrier_migrating, ...
  Severity severity = Severity::info;
  std::string title;           // one line: what is wrong
  std::vector<std::string> threads;
  Object evidence;             // the numbers that triggered it
  Object threshold;            // the limits they were held against
  std::string remedy;
};

struct NotEvaluated {          // a check the data could not answer, and why
  std::string id;
  std::string reason;
};

// ---- the diagnosis ----

struct DoctorInput {
  std::string label;           // the file, or "pid 1234"
  const Window* window = nullptr;
  uint32_t ncpus = 0;          // CPUs of the machine (trace meta); 0: unknown
  std::map<uint32_t, uint32_t> allowed_cpus;  // pid → CPUs its affinity allows (live); else from cpu_distribution
  const BatchTracker* batches = nullptr;      // nullptr: no raw events were kept
  std::string no_events_reason;               // why batches is null
  bool truncated = false;      // the recording was cut short
  std::string truncated_reason;
  bool complete = true;        // the recorder stopped cleanly
  uint64_t snapshots = 0;
  snapshot::RuntimeKind runtime = snapshot::RuntimeKind::other;  // what the target is: remedies use its knobs
};

// What --vs puts side by side.
struct KeyNumbers {
  size_t carriers = 0;
  std::optional<double> max_carrier_wait_pct;
  std::string max_wait_thread;
  std::optional<double> max_carrier_contended_wait_pct;  // raw events: waits behind another task
  std::optional<double> batch_after_long_wait;   // carriers' events per epoll return (raw events)
  std::optional<double> batch_after_short_wait;
  std::optional<double> long_wait_cycles_pct;    // share of those epoll returns after a long wait
  std::optional<double> carrier_migrations_per_s;   // sum over carriers
  std::optional<double> events_per_cycle;           // carriers' events ÷ their epoll returns
  std::optional<double> queue_depth_avg;            // carriers' drains
  // The requests the target served (kFieldRequests, server side, all its ports pooled): set
  // together, when it served any.
  std::optional<double> requests_per_s;
  std::optional<double> server_time_p50_us;
  std::optional<double> server_time_p99_us;
  std::optional<double> socket_wait_p99_us;
  std::optional<double> socket_wait_runnable_pct;   // of their socket wait, the reader runnable
};

// A carrier's %wait and its parts (bpf/wait_split.bpf.h); split is unset when the data has none
// (kFieldWaitSplit unset: procfs, older recordings).
struct CarrierWait {
  std::string thread;
  uint32_t tid = 0;
  double wait_pct = 0;
  std::optional<WaitSplit> split;
  uint32_t fields = 0;        // the window's Field bits: which parts were measured (wait_causes.hpp)
};

// `doctor --format json`'s schema: 1, the first round's keys (no schema_version key); 2 adds
// schema_version, runtime, carrier_wait and the findings cpu_throttled, vm_steal, irq_pressure;
// 3 adds the finding requests_waiting_in_sockets and the request key numbers (and --vs's
// side_by_side rows for them, and its verdict by server time p99).
// Keys are only ever added; a key that changes meaning takes a new version (docs/doctor.md).
inline constexpr int kJsonSchemaVersion = 3;

struct Diagnosis {
  std::string label;
  std::string source;          // "bpf" or "procfs"
  snapshot::RuntimeKind runtime = snapshot::RuntimeKind::other;
  double duration_s = 0;
  std::vector<std::string> carriers;
  std::vector<CarrierWait> carrier_wait;  // per carrier, in the order of `carriers`
  std::vector<Finding> findings;          // most severe first
  std::vector<NotEvaluated> not_evaluated;
  KeyNumbers key;
  size_t count(Severity s) const;
  int score() const;                      // critical 100, warn 10, info 1: lower is healthier
};

// Which threads of the window are carriers, and which are pollers that wake them.
struct Roles {
  std::vector<const ThreadWindow*> carriers;
  std::vector<const ThreadWindow*> pollers;
};
Roles find_roles(const Window& w);

Diagnosis diagnose(const DoctorInput& in);

}  // namespace platoon::analysis::doctor
