// How the bench sets up a runtime and pins its own threads.
#include <chrono>

#include "bench/runtime_bench/bench.hpp"
#include "runtime/topology.hpp"

namespace platoon::bench {

rt::Options make_options(const Config& cfg, int carriers) {
  rt::Options o;
  o.carriers = carriers;
  o.pin = cfg.pin;
  o.work_stealing = false;
  if (cfg.budget_us > 0) o.budget = std::chrono::microseconds(cfg.budget_us);
  return o;
}

int pin_self_to(int cpu) {
  if (cpu < 0) return -1;
  return rt::pin_current_thread(cpu) ? cpu : -1;
}

}  // namespace platoon::bench
