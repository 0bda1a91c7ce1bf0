// `platoon doctor`: findings about how the scheduler treats an event-loop server, each with the
// numbers that triggered it, the limits it was held against and a remedy. Pure model code: a
// Window (window.hpp) and, when the recording kept them, the raw events (for the platoon effect:
// batches measured against the run-queue wait that came before them) go in; findings come out,
// as text or as the JSON of ARCHITECTURE.md (`{"findings": [...]}`).
//
// Carriers are found, not named: a thread whose comm starts with "carrier", or that drains
// runtime fiber queues, or that makes epoll wait calls without being the poller that wakes the
// others (a nginx worker or any event loop counts).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "bpf/platoon.h"
#include "tui/model/window.hpp"

// Everything here lives in platoon::model::doctor: its generic names (Value, Finding, compare)
// stay out of the way of the rest of the model.
namespace platoon::model::doctor {

// ---- thresholds: every limit a finding is held against, with why it sits where it does ----

// carrier_waiting. The seed's unpinned carriers waited 11% of the time and its pinned ones 2%.
// On this 2-vCPU VM an unpinned carrier sharing both CPUs with the mock and the load waits 6-8%
// behind other tasks, and a pinned one alone on its CPU 0.3%; its whole tracepoint wait is
// still ~6% there, all of it the CPU waking from idle (~8 µs per wakeup, which schedstat books
// as run time), so with raw events the limit is held against the contended part only. 3% sits
// clear of the pinned case; at 10% a tenth of the time the carrier's whole queue is stalled.
inline constexpr double kWaitPctWarn = 3.0;
inline constexpr double kWaitPctCritical = 10.0;

// carrier_migrating. A carrier that keeps its CPU has no migrations at all (pinned: 0/s); an
// unpinned one under load moves hundreds of times a second. 10/s and 2% of its switch-ins keep
// a rare rebalance (or a mostly idle loop) from counting; 100/s is a move every 10 ms.
inline constexpr double kMigrationsPerSWarn = 10.0;
inline constexpr double kMigrationShareWarn = 2.0;     // % of switch-ins that changed CPU
inline constexpr double kMigrationsPerSCritical = 100.0;

// platoon_effect. A wait at least this long before a cycle counts as "long": ten times the
// wakeup latency of an idle CPU (~10-12 µs p50 here), and long enough for events to pile up at
// a few thousand requests per second per carrier.
inline constexpr uint64_t kLongWaitNs = 100'000;
// At least this many cycles after long waits and after short ones, or the means are noise.
inline constexpr uint64_t kMinEffectSamples = 50;
// Batches after long waits this many times the batches after short ones (and the correlation
// of wait and batch at least kMinCorrelation) is a platoon effect. The seed's unpinned carriers
// found 4.0 events per cycle against 1.6 pinned, 2.5x: that is kEffectRatioCritical, and 1.5x
// (a third of that excess) is enough to call it an effect.
inline constexpr double kEffectRatioWarn = 1.5;
inline constexpr double kEffectRatioCritical = 2.5;
inline constexpr double kMinCorrelation = 0.1;
// Critical also needs the long waits to be common: at least this share of a carrier's cycles
// (rare stalls with big batches are worth knowing, but they are not most of the latency).
inline constexpr double kLongWaitSharePctCritical = 1.0;
// Waits are capped here in the correlation, so that one stall of a second (a stopped process)
// does not stand for a thousand ordinary preemptions.
inline constexpr uint64_t kWaitCapNs = 10'000'000;
// Events can reach the reader up to this much out of timestamp order (one ring buffer, many
// CPUs); they are re-sorted within this horizon.
inline constexpr uint64_t kReorderNs = 50'000'000;

// poller_competing. A thread that woke carriers at least this often is their poller; it competes
// when it also preempted carriers this often, or itself waited kWaitPctWarn of the time.
inline constexpr double kPollerWakeupsPerS = 50.0;
inline constexpr double kPollerPreemptionsPerS = 10.0;

// oversubscribed. A thread runnable (running or waiting) at least half the window is busy;
// more busy threads than CPUs they may use, or more demand (Σ run + wait) than those CPUs, means
// some of them always wait.
inline constexpr double kBusyPct = 50.0;
inline constexpr double kDemandFactor = 1.0;

// lost_events. Losing up to this share of the raw events is noted (info); beyond it the
// batch analysis may be skewed (warn).
inline constexpr double kLostEventsPctWarn = 1.0;

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

// ---- the platoon effect from raw events ----

// Batches of one kind (epoll returns or runtime drains) of one thread, split by the run-queue
// wait the thread had since its previous batch of that kind.
struct BatchStats {
  uint64_t samples = 0;
  uint64_t long_n = 0;         // after a wait ≥ kLongWaitNs
  double long_sum = 0;
  uint64_t short_n = 0;
  double short_sum = 0;
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;  // Pearson sums: x = wait µs (capped), y = batch

  void add(uint64_t wait_ns, double batch);
  double long_mean() const { return long_n ? long_sum / static_cast<double>(long_n) : 0; }
  double short_mean() const { return short_n ? short_sum / static_cast<double>(short_n) : 0; }
  std::optional<double> correlation() const;  // nullopt: too few samples or no variance
};

// Who had the CPU when a waiting thread finally got it: the task it waited behind.
struct Behind {
  uint32_t pid = 0;
  std::string comm;
  uint64_t count = 0;
  uint64_t ns = 0;             // the waits that ended with this task handing over the CPU
};
inline constexpr size_t kMaxBehind = 64;  // per thread; the rest count under kOtherTid
inline constexpr uint32_t kOtherTid = 0xffffffff;

struct ThreadBatches {
  uint32_t tid = 0;
  BatchStats epoll;            // ready events per epoll return
  BatchStats drain;            // queue depth at drain start
  uint64_t preemptions = 0;    // switched out while runnable
  // The wait split by what ended it: a switch from the idle task is the CPU waking up (about
  // 10 µs per wakeup in this VM, booked as run time by schedstat and pidstat); a switch from
  // another task is the thread waiting for that task, which is what pinning and cpusets cure.
  uint64_t waits = 0;
  uint64_t wait_ns = 0;
  uint64_t idle_exit_ns = 0;
  uint64_t contended_ns() const { return wait_ns - idle_exit_ns; }
  std::map<uint32_t, Behind> behind;
};

// Follows each thread through its switches, wakeups, epoll returns and drains. Feed every event
// record (any order within kReorderNs), then finish(). Memory: the reorder horizon plus a few
// numbers per thread, so a long recording or a live watch stays small.
class BatchTracker {
 public:
  void add(const platoon_event_header& h, const void* record, size_t size);
  void finish();
  uint64_t events() const { return events_; }
  const std::map<uint32_t, ThreadBatches>& threads() const { return out_; }

 private:
  enum class Kind : uint8_t { wake, preempted, blocked, switch_in, epoll, drain };
  struct Item {
    uint64_t ts;
    uint64_t seq;              // arrival order breaks timestamp ties
    uint32_t tid;
    Kind kind;
    int64_t value;             // epoll: events; drain: queue depth; switch_in: the previous task
    bool operator>(const Item& o) const { return ts != o.ts ? ts > o.ts : seq > o.seq; }
  };
  struct Since {                  // since the previous batch of one kind
    uint64_t wait = 0;             // run-queue wait
    bool seen = false;             // the first batch has unknown history: skipped
  };
  struct State {
    uint64_t runnable_since = 0;   // 0: not waiting for a CPU
    bool on_cpu = false;
    Since epoll, drain;
  };
  void push(uint64_t ts, uint32_t tid, Kind kind, int64_t value);
  void release(uint64_t upto);
  void apply(const Item& it);
  void add_wait(uint32_t tid, uint32_t prev, uint64_t wait);
  ThreadBatches& out_for(uint32_t tid);
  static void close_batch(Since& since, BatchStats& stats, int64_t batch);

  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pending_;
  uint64_t seq_ = 0;
  uint64_t newest_ = 0;
  uint64_t events_ = 0;
  std::map<uint32_t, State> state_;
  std::map<uint32_t, ThreadBatches> out_;
  std::map<uint32_t, std::pair<uint32_t, std::string>> names_;  // tid → (pid, comm), from switches
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
};

struct Diagnosis {
  std::string label;
  std::string source;          // "bpf" or "procfs"
  double duration_s = 0;
  std::vector<std::string> carriers;
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

std::string text(const Diagnosis& d);
std::string json(const Diagnosis& d, bool pretty = true);

// --vs: which run is healthier and why.
struct Comparison {
  int healthier = 0;           // 0: A, 1: B, -1: neither
  std::vector<std::string> reasons;
};
Comparison compare(const Diagnosis& a, const Diagnosis& b);
std::string compare_text(const Diagnosis& a, const Diagnosis& b);
std::string compare_json(const Diagnosis& a, const Diagnosis& b, bool pretty = true);

}  // namespace platoon::model::doctor
