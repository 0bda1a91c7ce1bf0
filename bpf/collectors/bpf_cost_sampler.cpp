#include "bpf/collectors/bpf_cost_sampler.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "bpf/collectors/bpf_stats.hpp"
#include "bpf/snapshot/clock.hpp"

namespace platoon::collectors {

using snapshot::ProgramCost;

namespace {

// The entry for `name` in v, or null (const or not, as v is).
template <class Programs>
auto* find(Programs& v, const std::string& name) {
  auto it = std::find_if(v.begin(), v.end(), [&](const snapshot::ProgramCost& p) { return p.name == name; });
  return it == v.end() ? nullptr : &*it;
}

// sum += to - from, per program by name (a program without a `from` counted nothing before).
void add_window(std::vector<snapshot::ProgramCost>& sum, const std::vector<snapshot::ProgramCost>& from,
                const std::vector<snapshot::ProgramCost>& to) {
  for (const snapshot::ProgramCost& b : to) {
    const snapshot::ProgramCost* a = find(from, b.name);
    const uint64_t runs = a && a->run_cnt <= b.run_cnt ? b.run_cnt - a->run_cnt : 0;
    const uint64_t ns = a && a->run_time_ns <= b.run_time_ns ? b.run_time_ns - a->run_time_ns : 0;
    snapshot::ProgramCost* s = find(sum, b.name);
    if (!s) s = &sum.emplace_back(snapshot::ProgramCost{b.name, 0, 0, 0});
    s->run_cnt += runs;
    s->run_time_ns += ns;
  }
}

// Every signal blocked in this thread while it lives, so that a thread it starts inherits the
// mask from its first instruction: signals are for the command's own loop (its stop flag and
// the waits they interrupt), never for the sampler.
class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old_);
  }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_{};
};

}  // namespace

struct BpfCostSampler::State {
  ReadCounters read;
  std::string why;
  bool sampling = false;               // a thread opens and closes windows
  std::optional<BpfStatsHold> always;  // --bpf-stats-always, or the sysctl's look

  mutable std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  std::optional<BpfStatsHold> window;  // held while a window is open
  uint64_t window_start_ns = 0;
  std::vector<snapshot::ProgramCost> at_start;  // the counters when it opened
  std::vector<snapshot::ProgramCost> counted;  // the closed windows' sums
  uint64_t counted_ns = 0;
  std::thread thread;

  // Under m. False when the stats cannot be turned on (why says so).
  bool open_window() {
    BpfStatsHold h = BpfStatsHold::acquire(true);
    if (!h.holds()) {
      why = h.why();
      return false;
    }
    window.emplace(std::move(h));
    window_start_ns = snapshot::boottime_ns();
    at_start = read();
    return true;
  }
  void close_window() {
    if (!window) return;
    add_window(counted, at_start, read());
    counted_ns += snapshot::boottime_ns() - window_start_ns;
    window.reset();
  }
  void run() {
    using namespace std::chrono;
    const auto on = nanoseconds(snapshot::kStatsSampleOnNs), period = nanoseconds(snapshot::kStatsSamplePeriodNs);
    auto start = steady_clock::now();   // of the window open now (the constructor opened the first)
    std::unique_lock lk(m);
    while (true) {
      if (cv.wait_until(lk, start + on, [&] { return stop; })) break;
      close_window();
      start += period;
      // A sampler that fell behind (a stopped process) starts afresh rather than catching up.
      if (start < steady_clock::now()) start = steady_clock::now();
      if (cv.wait_until(lk, start, [&] { return stop; })) break;
      if (!open_window()) break;
    }
    close_window();
  }
};

BpfCostSampler::BpfCostSampler(BpfStatsMode mode, ReadCounters read) : s_(std::make_unique<State>()) {
  s_->read = std::move(read);
  if (mode != BpfStatsMode::sampled || bpf_stats_sysctl_on()) {
    s_->always.emplace(BpfStatsHold::acquire(mode == BpfStatsMode::always));
    s_->why = s_->always->why();
    return;
  }
  std::lock_guard lk(s_->m);
  if (!s_->open_window()) return;
  s_->sampling = true;
  s_->why = std::string("sampled by platoon: on ") + snapshot::kStatsSampleText;
  const SignalsBlocked blocked;
  s_->thread = std::thread([s = s_.get()] { s->run(); });
}

BpfCostSampler::~BpfCostSampler() {
  if (!s_->thread.joinable()) return;
  {
    std::lock_guard lk(s_->m);
    s_->stop = true;
  }
  s_->cv.notify_all();
  s_->thread.join();
}

snapshot::CostReading BpfCostSampler::reading() const {
  std::lock_guard lk(s_->m);
  snapshot::CostReading r;
  const std::vector<snapshot::ProgramCost> now = s_->read();
  if (!s_->sampling) {
    const bool counting = s_->always && s_->always->counting();
    r.stats = counting ? snapshot::BpfStats::on : snapshot::BpfStats::unknown;
    r.why = s_->why;
    r.programs = now;
    return r;
  }
  r.stats = snapshot::BpfStats::on;
  r.why = s_->why;
  r.sampled = true;
  std::vector<snapshot::ProgramCost> sum = s_->counted;
  r.counted_ns = s_->counted_ns;
  if (s_->window) {
    add_window(sum, s_->at_start, now);
    r.counted_ns += snapshot::boottime_ns() - s_->window_start_ns;
  }
  // Every program, in the kernel's order; misses are the kernel's whole count.
  for (const snapshot::ProgramCost& p : now) {
    const snapshot::ProgramCost* c = find(sum, p.name);
    r.programs.push_back({p.name, c ? c->run_cnt : 0, c ? c->run_time_ns : 0, p.misses});
  }
  return r;
}

}  // namespace platoon::collectors
