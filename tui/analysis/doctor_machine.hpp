// The doctor's checks of what the machine and the container do to the target, rather than its
// own threads: cpu_throttled (the CPU quota of its cgroup), vm_steal (the hypervisor takes its
// CPUs) and irq_pressure (interrupts eat its CPUs). Each reads the window's per-CPU times,
// cgroups and the wait split of the threads that matter (the carriers when there are any, else
// every busy thread), so it answers for a JVM or a Go binary as for platoon-server.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tui/analysis/doctor.hpp"

namespace platoon::model::doctor {

struct MachineCheckInput {
  const Window& w;
  std::vector<const ThreadWindow*> threads;   // the threads the findings are about
  std::function<std::string(const ThreadWindow&)> name;
  const Remedies& remedies;
};

// Each appends at most one finding (per cgroup for cpu_throttled) or a NotEvaluated saying why not.
void check_throttled(const MachineCheckInput& in, std::vector<Finding>& out, std::vector<NotEvaluated>& skipped);
void check_steal(const MachineCheckInput& in, std::vector<Finding>& out, std::vector<NotEvaluated>& skipped);
void check_irq(const MachineCheckInput& in, std::vector<Finding>& out, std::vector<NotEvaluated>& skipped);

}  // namespace platoon::model::doctor
