// The clock of the drain budget: read after every fiber, so it must be cheap. The TSC costs
// ~10 ns here against ~23 ns for clock_gettime; it is used when the CPU says it is invariant
// (constant_tsc and nonstop_tsc), calibrated once against CLOCK_MONOTONIC.
#pragma once

#include <cstdint>
#include <x86intrin.h>

namespace platoon::rt {

class BudgetClock {
 public:
  static const BudgetClock& get();  // calibrates on first use (~2 ms)
  uint64_t now() const { return use_tsc_ ? __rdtsc() : mono_ns(); }
  uint64_t ticks_for_ns(uint64_t ns) const { return use_tsc_ ? static_cast<uint64_t>(static_cast<double>(ns) * ticks_per_ns_) : ns; }
  bool uses_tsc() const { return use_tsc_; }

 private:
  BudgetClock();
  static uint64_t mono_ns();
  bool use_tsc_ = false;
  double ticks_per_ns_ = 1.0;
};

}  // namespace platoon::rt
