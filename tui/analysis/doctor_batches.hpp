// platoon doctor's raw-event analysis for the platoon effect: each thread's batches (ready events
// per epoll return, queue depth per drain) split by the run-queue wait that came before them,
// and who the thread waited behind. Streams: a long recording or a live watch stays small.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "bpf/platoon.h"
#include "tui/analysis/doctor_thresholds.hpp"
#include "tui/trace/events.hpp"

namespace platoon::analysis::doctor {

// The batches against the wait before them, binned, for a picture of the platoon effect (the
// HTML report's heat map): bounded whatever the recording's length. Wait bins are log2 µs
// (bin 0: under 1 µs, bin i: [2^(i-1), 2^i) µs, the last: that or more); batch bins are exact
// sizes up to 8, then log2 ranges (8-15, 16-31, ...), the last open-ended.
struct BatchGrid {
  static constexpr int kWaitBins = 22;   // the last bin: a second (2^20 µs) or more
  static constexpr int kBatchBins = 13;  // 0..7, 8-15, 16-31, 32-63, 64-127, 128+
  static int wait_bin(uint64_t wait_ns);
  static int batch_bin(double batch);
  static double wait_bin_low_us(int bin);         // the bin's lower edge (0 for bin 0)
  static double batch_bin_low(int bin);           // the smallest batch the bin holds
  std::array<std::array<uint32_t, kBatchBins>, kWaitBins> count{};
};

// Batches of one kind (epoll returns or runtime drains) of one thread, split by the run-queue
// wait the thread had since its previous batch of that kind.
struct BatchStats {
  uint64_t samples = 0;
  uint64_t long_n = 0;         // after a wait ≥ kLongWaitNs
  double long_sum = 0;
  uint64_t short_n = 0;
  double short_sum = 0;
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;  // Pearson sums: x = wait µs (capped), y = batch
  BatchGrid grid;

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
  // 10 µs per wakeup in docs/doctor.md's benchmark runs, kernel 6.18, booked as run time by
  // schedstat and pidstat); a switch from another task is the thread waiting for that task,
  // which is what pinning and cpusets cure.
  uint64_t waits = 0;
  uint64_t wait_ns = 0;
  uint64_t idle_exit_ns = 0;
  uint64_t contended_ns() const { return wait_ns - idle_exit_ns; }
  std::map<uint32_t, Behind> behind;
};

// Follows each thread through its switches, wakeups, epoll returns and drains: an EventVisitor
// behind the shared reorder buffer. Feed every event record (any order within
// kReorderHorizonNs), then finish(). Memory: the reorder horizon plus a few numbers per thread,
// so a long recording or a live watch stays small.
class BatchTracker : private trace::EventVisitor {
 public:
  void add(const platoon_event_header& h, const void* record, size_t size) { reader_.add(h, record, size, *this); }
  void finish();
  uint64_t events() const { return reader_.stats().records; }
  const std::map<uint32_t, ThreadBatches>& threads() const { return out_; }

 private:
  struct Since {                  // since the previous batch of one kind
    uint64_t wait = 0;             // run-queue wait
    bool seen = false;             // the first batch has unknown history: skipped
  };
  struct State {
    uint64_t runnable_since = 0;   // 0: not waiting for a CPU
    bool on_cpu = false;
    Since epoll, drain;
  };
  void on_switch(const platoon_event_header& h, const platoon_ev_switch& e) override;
  void on_wake(const platoon_event_header& h, const platoon_ev_wake& e, trace::WakeKind kind) override;
  void on_epoll(const platoon_event_header& h, const platoon_ev_epoll& e) override;
  void on_drain(const platoon_event_header& h, const platoon_ev_runtime& e) override;
  void switch_out(uint64_t ts, uint32_t tid, bool preempted);
  void switch_in(uint64_t ts, uint32_t tid, uint32_t prev);
  void add_wait(uint32_t tid, uint32_t prev, uint64_t wait);
  void name_behind();
  ThreadBatches& out_for(uint32_t tid);
  static void close_batch(Since& since, BatchStats& stats, int64_t batch);

  trace::EventReader reader_;
  std::map<uint32_t, State> state_;
  std::map<uint32_t, ThreadBatches> out_;
  std::map<uint32_t, std::pair<uint32_t, std::string>> names_;  // tid → (pid, comm), from switches
};

}  // namespace platoon::analysis::doctor
