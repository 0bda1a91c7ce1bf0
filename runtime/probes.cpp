// The semaphores of the USDT probes: in .probes, where tracers look for them.
#include "runtime/probes.hpp"

#define PLATOON_DEFINE_SEMAPHORE(name) \
  __attribute__((section(".probes"), used)) volatile unsigned short PLATOON_SEMAPHORE(name) = 0

extern "C" {
PLATOON_DEFINE_SEMAPHORE(poll);
PLATOON_DEFINE_SEMAPHORE(drain_start);
PLATOON_DEFINE_SEMAPHORE(drain_end);
PLATOON_DEFINE_SEMAPHORE(drain);
PLATOON_DEFINE_SEMAPHORE(steal);
PLATOON_DEFINE_SEMAPHORE(park);
PLATOON_DEFINE_SEMAPHORE(unpark);
PLATOON_DEFINE_SEMAPHORE(carrier_sleep);
PLATOON_DEFINE_SEMAPHORE(carrier_wake);
PLATOON_DEFINE_SEMAPHORE(stats);
}
