#include "tui/analysis/doctor_remedies.hpp"

#include <fmt/format.h>

#include <array>

namespace platoon::analysis::doctor {

namespace {

// Each runtime's knobs, one row per RuntimeKind (in its order): what the findings' remedies say.
struct Knobs {
  snapshot::RuntimeKind kind;
  const char* size_carriers;     // a format: {0} is the number of carriers
  const char* share_queues;
  const char* pin_carriers;
  const char* poller_priority;
  const char* shorter_turns;
  const char* wake_sooner;
};

// Outside platoon-runtime a sleeping loop is woken by the kernel: busy polling or shallower
// CPU idle states shorten that, at the price of CPU time.
constexpr const char* kKernelWakeSooner =
    "busy polling before sleeping (net.core.busy_poll / SO_BUSY_POLL, in µs) or shallower CPU idle states "
    "(cpupower idle-set -D 10); both spend CPU";

constexpr std::array<Knobs, 4> kKnobs{{
    {snapshot::RuntimeKind::other, "{0} event-loop or worker threads (the server's own setting)",
     "work stealing between the event loops, if the server has it",
     "taskset -c / a cpuset per event-loop thread (taskset -pc CPU TID)",
     "renice/chrt the polling thread above the workers (renice -n -5 -p TID)",
     "less work per loop turn between polls (the server's own batch or budget setting)", kKernelWakeSooner},
    {snapshot::RuntimeKind::platoon, "platoon-server --carriers {0}", "platoon-server --work-stealing", "platoon-server --pin",
     "platoon-server --poller-nice -5 or --carrier-nice 5",
     "platoon-server --budget-us 25 (the drain's time budget, 50 µs by default: the carrier polls its sockets sooner)",
     "platoon-server --idle-spin-us 50 (an idle carrier polls that long before it sleeps; it spends CPU)"},
    // Loom's carriers are the ForkJoinPool's threads; the JVM sizes it (and its GC and JIT
    // threads) from the CPUs it believes it has, which a quota does not change. Its master
    // poller is a platform thread the carriers wait behind; loom/fibers' pollerMode=3 gives each
    // carrier its own sub-poller.
    {snapshot::RuntimeKind::jvm, "-Djdk.virtualThreadScheduler.parallelism={0} -XX:ActiveProcessorCount={0}",
     "the default ForkJoinPool scheduler, which steals (not a custom per-carrier scheduler)",
     "a cpuset for the JVM (taskset -c / the container's cpuset) with the carrier count equal to its CPUs; "
     "the JDK cannot pin individual carriers",
     "-Djdk.pollerMode=3 (loom/fibers: a sub-poller per carrier, no shared master poller), or the "
     "master poller thread reniced above the carriers (renice -n -5 -p TID)",
     "less work per turn on the event loops (Netty: hand blocking or heavy work to other executors), or more "
     "carriers (-Djdk.virtualThreadScheduler.parallelism) where CPUs allow",
     kKernelWakeSooner},
    {snapshot::RuntimeKind::go, "GOMAXPROCS={0}", "nothing to set: Go's Ps steal from each other already",
     "a cpuset for the process (taskset -c) with GOMAXPROCS equal to its CPUs; the Go scheduler cannot pin Ps",
     "nothing to set: Go's netpoller runs on its Ps; lower the other busy threads instead",
     "nothing to set: Go polls the network between goroutines; GOMAXPROCS up to the CPUs gives it more Ps",
     kKernelWakeSooner},
}};

constexpr bool in_kind_order() {
  for (size_t i = 0; i < kKnobs.size(); ++i)
    if (kKnobs[i].kind != static_cast<snapshot::RuntimeKind>(i)) return false;
  return true;
}
static_assert(in_kind_order());

const Knobs& knobs(snapshot::RuntimeKind k) {
  const auto i = static_cast<size_t>(k);
  return i < kKnobs.size() ? kKnobs[i] : kKnobs[0];
}

}  // namespace

std::string Remedies::size_carriers(const std::string& n) const {
  return fmt::format(fmt::runtime(knobs(kind).size_carriers), n);
}
std::string Remedies::share_queues() const { return knobs(kind).share_queues; }
std::string Remedies::pin_carriers() const { return knobs(kind).pin_carriers; }
std::string Remedies::poller_priority() const { return knobs(kind).poller_priority; }
std::string Remedies::shorter_turns() const { return knobs(kind).shorter_turns; }
std::string Remedies::wake_sooner() const { return knobs(kind).wake_sooner; }

}  // namespace platoon::analysis::doctor
