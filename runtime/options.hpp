// Runtime configuration: how many carriers, which scheduler, which poller, pinning, budget.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace platoon::rt {

enum class Scheduler { carrier, pool };
enum class PollerMode { carrier, master };

std::optional<Scheduler> parse_scheduler(std::string_view s);
std::optional<PollerMode> parse_poller(std::string_view s);
const char* to_string(Scheduler s);
const char* to_string(PollerMode p);

// Called by a carrier right after each non-blocking poll, on the carrier thread.
// For tests and tools that need to see the loop's rhythm; leave empty in production.
struct PollObservation {
  int carrier;             // index of the carrier
  uint64_t now_ns;         // CLOCK_MONOTONIC
  uint32_t io_events;      // callbacks the poll ran
  uint32_t fibers_in_last_drain;
};
using PollObserver = std::function<void(const PollObservation&)>;

struct Options {
  Scheduler scheduler = Scheduler::carrier;
  // carrier mode: carriers that run fibers and poll their own fds.
  // pool mode: I/O event-loop threads (they run only the fibers spawned on them).
  int carriers = 2;
  // pool mode only: worker threads that run pool fibers from work-stealing queues.
  int workers = 0;  // 0: same as carriers
  bool work_stealing = false;  // carrier mode; pool workers always steal
  bool pin = false;
  PollerMode poller = PollerMode::carrier;  // pool mode always has a master poller
  std::chrono::microseconds budget{50};
  std::optional<int> carrier_nice;  // setpriority() for carriers / workers
  std::optional<int> poller_nice;   // setpriority() for the master poller
  // Before sleeping, an idle carrier keeps polling (non-blocking) for this long: fewer context
  // switches and wakeup latencies for more CPU (Seastar's idle poll). 0: sleep at once.
  std::chrono::microseconds idle_spin{0};
  std::size_t stack_size = 64 * 1024;  // usable bytes per fiber stack; a guard page is added
  PollObserver on_poll;
};

}  // namespace platoon::rt
