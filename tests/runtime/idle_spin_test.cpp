// Options::idle_spin: an idle carrier keeps polling before it sleeps, so work that arrives
// within the spin (here a 500 µs timer) is picked up without blocking in epoll_wait.
#include <gtest/gtest.h>

#include <chrono>

#include "runtime/runtime.hpp"

namespace {
namespace rt = platoon::rt;
using namespace std::chrono_literals;

uint64_t sleeps_during_timer_loop(std::chrono::microseconds spin) {
  rt::Options o;
  o.carriers = 1;
  o.idle_spin = spin;
  rt::Runtime r(o);
  const uint64_t before = r.stats()[0].sleeps;
  r.spawn_joinable([] {
    for (int i = 0; i < 50; ++i) rt::this_fiber::sleep_for(500us);
  }).join();
  return r.stats()[0].sleeps - before;
}
}  // namespace

TEST(IdleSpinTest, SpinningCarrierDoesNotSleepBetweenShortTimers) {
  const uint64_t without = sleeps_during_timer_loop(0us);
  const uint64_t with = sleeps_during_timer_loop(20000us);
  EXPECT_GE(without, 40u) << "without a spin the carrier sleeps through every 500 us timer";
  EXPECT_LE(with, 5u) << "a 20 ms spin covers each 500 us timer";
}
