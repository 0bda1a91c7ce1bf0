#include "tui/analysis/doctor_remedies.hpp"

#include <fmt/format.h>

namespace platoon::model::doctor {

std::string Remedies::share_queues() const {
  switch (kind) {
    case RuntimeKind::platoon: return "platoon-server --work-stealing";
    case RuntimeKind::jvm: return "the default ForkJoinPool scheduler, which steals (not a custom per-carrier scheduler)";
    case RuntimeKind::go: return "nothing to set: Go's Ps steal from each other already";
    case RuntimeKind::other: break;
  }
  return "work stealing between the event loops, if the server has it";
}

std::string Remedies::size_carriers(const std::string& n) const {
  switch (kind) {
    case RuntimeKind::platoon: return fmt::format("platoon-server --carriers {}", n);
    case RuntimeKind::jvm:
      // Loom's carriers are the ForkJoinPool's threads; the JVM sizes it (and its GC and JIT
      // threads) from the CPUs it believes it has, which a quota does not change.
      return fmt::format("-Djdk.virtualThreadScheduler.parallelism={0} -XX:ActiveProcessorCount={0}", n);
    case RuntimeKind::go: return fmt::format("GOMAXPROCS={}", n);
    case RuntimeKind::other: break;
  }
  return fmt::format("{} event-loop or worker threads (the server's own setting)", n);
}

std::string Remedies::pin_carriers() const {
  switch (kind) {
    case RuntimeKind::platoon: return "platoon-server --pin";
    case RuntimeKind::jvm:
      return "a cpuset for the JVM (taskset -c / the container's cpuset) with the carrier count equal to its CPUs; "
             "the JDK cannot pin individual carriers";
    case RuntimeKind::go:
      return "a cpuset for the process (taskset -c) with GOMAXPROCS equal to its CPUs; the Go scheduler cannot pin Ps";
    case RuntimeKind::other: break;
  }
  return "taskset -c / a cpuset per event-loop thread (taskset -pc CPU TID)";
}

std::string Remedies::isolate_cpus() const {
  return "a cpuset of its own for the server (taskset -c, cgroup cpuset.cpus, Kubernetes static CPU manager) and "
         "the other busy tasks on the remaining CPUs";
}

std::string Remedies::poller_priority() const {
  switch (kind) {
    case RuntimeKind::platoon: return "platoon-server --poller-nice -5 or --carrier-nice 5";
    case RuntimeKind::jvm:
      // The seeds (../shared/background): the master poller is a platform thread the carriers
      // wait behind; loom/fibers' pollerMode=3 gives each carrier its own sub-poller.
      return "-Djdk.pollerMode=3 (loom/fibers: a sub-poller per carrier, no shared master poller), or the "
             "master poller thread reniced above the carriers (renice -n -5 -p TID)";
    case RuntimeKind::go: return "nothing to set: Go's netpoller runs on its Ps; lower the other busy threads instead";
    case RuntimeKind::other: break;
  }
  return "renice/chrt the polling thread above the workers (renice -n -5 -p TID)";
}

}  // namespace platoon::model::doctor
